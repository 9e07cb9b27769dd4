// model/tokenizer/pre_tokenizer.h — tokenizer.json "pre_tokenizer" section.
//
// Supported: ByteLevel, Metaspace, Split, Sequence, Whitespace, WhitespaceSplit, Digits, Punctuation,
// with Hugging Face's split behaviours (Removed, Isolated, MergedWithPrevious, MergedWithNext,
// Contiguous) and `invert`.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "model/tokenizer/pieces.h"
#include "model/tokenizer/regex.h"

namespace pc::tok {

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Splits every plain-text piece (added tokens pass through); empty pieces are dropped.
  void Apply(Pieces* pieces) const;
  // True when the pipeline maps bytes to the GPT-2 byte-level alphabet.
  virtual bool IsByteLevel() const { return false; }
  virtual bool IsMetaspace() const { return false; }

 protected:
  // Appends the parts of one plain-text piece to `out`.
  virtual void SplitPiece(Piece piece, Pieces* out) const = 0;
};

// null json -> nullptr. Errors name `where` and list the supported types.
std::unique_ptr<PreTokenizer> MakePreTokenizer(const nlohmann::json& spec, const std::string& where);

// GPT-2's pre-tokenization regex, as Hugging Face's ByteLevel uses it.
extern const char* const kGpt2Regex;
// The GPT-2 regex split of `text` (Isolated): the words a byte-level BPE sees, before byte mapping.
std::vector<Span> Gpt2Split(std::string_view text);

}  // namespace pc::tok
