// model/tokenizer/added_vocab.h — tokenizer.json "added_tokens": matched in the text before the model.
//
// As Hugging Face's AddedVocabulary: tokens with normalized=false are matched on the raw text first
// (leftmost-longest), the remaining text is normalized, then tokens with normalized=true are matched
// (their content normalized the same way). single_word, lstrip and rstrip as Hugging Face applies them.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "model/tokenizer/normalizer.h"
#include "model/tokenizer/pieces.h"

namespace pc::tok {

struct AddedToken {
  std::string content;
  int32_t id = -1;
  bool special = false;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
};

class AddedVocabulary {
 public:
  AddedVocabulary() = default;
  // `normalizer` (may be null) normalizes the content of normalized tokens; it must outlive nothing.
  AddedVocabulary(std::vector<AddedToken> tokens, const Normalizer* normalizer);

  const std::vector<AddedToken>& tokens() const { return tokens_; }
  // Splits `text` into added tokens and normalized plain-text pieces (empty ones dropped).
  Pieces SplitAndNormalize(const std::string& text, const Normalizer* normalizer) const;

 private:
  // Leftmost-longest literal matching over a few patterns, bucketed by first byte.
  class Matcher {
   public:
    void Add(std::string pattern, int token_index);
    void Finish();
    // The next match at or after `from`: (start, length, token index); length 0 when none.
    struct Match {
      size_t start = 0, length = 0;
      int token = -1;
    };
    Match Find(const std::string& text, size_t from) const;
    bool empty() const { return patterns_.empty(); }

   private:
    std::vector<std::pair<std::string, int>> patterns_;
    std::array<std::vector<int>, 256> by_first_byte_;  // indices into patterns_, longest first
  };

  void SplitOn(const Matcher& matcher, Piece piece, Pieces* out) const;

  std::vector<AddedToken> tokens_;
  Matcher raw_, normalized_;
};

}  // namespace pc::tok
