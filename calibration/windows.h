// calibration/windows.h — text -> token stream -> windows (docs/METRICS.md): the whole text is tokenized once, the tokenizer's special prefix (BOS
// for Llama) added once at the start, then cut into consecutive non-overlapping windows of
// seq_len tokens, the tail dropped.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/text.h"
#include "model/tokenizer/tokenizer.h"

namespace pc {

struct TokenWindows {
  at::Tensor tokens;           // (windows, seq_len) int64
  int64_t stream_tokens = 0;   // tokens in the whole stream (with the prefix)
  int64_t seq_len = 0;
  int64_t windows() const { return tokens.size(0); }
};

// prefix_ids + Encode(text)
std::vector<int64_t> TokenizeStream(const Tokenizer& tokenizer, const std::string& text);

// Errors name `what` (the text's path) and both counts when the stream is shorter than one
// window. max_windows <= 0: all.
TokenWindows MakeWindows(const std::vector<int64_t>& stream, int64_t seq_len, int64_t max_windows,
                         const std::string& what);

// The evaluation window length: `requested` tokens, or with 0 (the default of --seq-len) 2048
// capped at the model's context `context` (the perplexity convention; full-context windows of
// 32768 tokens, Mistral's and Qwen2's, do not fit attention scores in memory).
constexpr int64_t kDefaultEvalSeqLen = 2048;
int64_t EvalSeqLen(int64_t requested, int64_t context);

// The id a sentence is scored after when scoring it alone (docs/METRICS.md "Minimal pairs"):
// BOS when the tokenizer has one, otherwise the end-of-text token.
int64_t ScoringStartId(const Tokenizer& tokenizer);

}  // namespace pc
