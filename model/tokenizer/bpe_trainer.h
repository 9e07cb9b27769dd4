// model/tokenizer/bpe_trainer.h — training a GPT-2-style byte-level BPE tokenizer on text.
//
// Vocabulary: the special tokens (ids 0..S-1), the 256 bytes in byte order as GPT-2 byte-level
// characters (ids S..S+255), then one token per merge. Text is split on the special tokens (they
// are never learned), pre-tokenized with the GPT-2 regex (ByteLevel, add_prefix_space false), and
// the unique words are counted once. Each step merges the most frequent adjacent pair (counts
// weighted by word frequency, updated incrementally in the words that hold the pair).
// Ties: the pair with the smaller (left id, right id) wins, i.e. older tokens first, bytes in byte
// order (Hugging Face's BpeTrainer uses the same rule). A merge whose string already is a token
// reuses that token's id (as Hugging Face does). Deterministic: same text, same result.
// The result is a "bpe-bytelevel" tokenizer: "<|endoftext|>" (the first special token) is bos and
// eos, the post-processor adds nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/tokenizer/tokenizer.h"

namespace pc {

struct BpeTrainerOptions {
  int32_t vocab_size = 4096;  // specials + 256 bytes + merges
  std::vector<std::string> special_tokens = {"<|endoftext|>"};
  int64_t min_pair_count = 2;  // pairs seen fewer times are never merged
  // Throws naming the option: vocab_size below 256 + specials, empty or repeated special tokens, ...
  void Validate() const;
};

struct BpeTrainResult {
  std::unique_ptr<Tokenizer> tokenizer;
  int32_t merges = 0;          // merges learned
  bool stopped_early = false;  // vocab_size not reached: no remaining pair occurs min_pair_count times
  int64_t words = 0;           // pre-tokenized words counted
  int64_t unique_words = 0;
};

class ByteLevelBpeTrainer {
 public:
  explicit ByteLevelBpeTrainer(BpeTrainerOptions options);
  // Counts the words of `text` (valid UTF-8); may be called once per document.
  void AddText(const std::string& text);
  BpeTrainResult Train() const;

 private:
  BpeTrainerOptions options_;
  std::unordered_map<std::string, int32_t> word_index_;  // word bytes -> index into words_
  std::vector<std::string> words_;                       // in first-seen order (determinism)
  std::vector<int64_t> counts_;
  int64_t total_words_ = 0;
};

}  // namespace pc
