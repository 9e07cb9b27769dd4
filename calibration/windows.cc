#include "calibration/windows.h"

#include <algorithm>

#include "core/error.h"

namespace pc {

std::vector<int64_t> TokenizeStream(const Tokenizer& tokenizer, const std::string& text) {
  std::vector<int32_t> ids = tokenizer.EncodeWithSpecial(text);
  return std::vector<int64_t>(ids.begin(), ids.end());
}

TokenWindows MakeWindows(const std::vector<int64_t>& stream, int64_t seq_len, int64_t max_windows,
                         const std::string& what) {
  PC_CHECK(seq_len >= 2, "--seq-len must be at least 2, got ", seq_len);
  const int64_t n = static_cast<int64_t>(stream.size());
  PC_CHECK(n >= seq_len, what, ": the text gives ", n, " tokens, fewer than one window of --seq-len ", seq_len,
           " tokens");
  int64_t windows = n / seq_len;
  if (max_windows > 0) windows = std::min(windows, max_windows);
  TokenWindows w;
  w.seq_len = seq_len;
  w.stream_tokens = n;
  w.tokens = at::from_blob(const_cast<int64_t*>(stream.data()), {windows, seq_len}, at::kLong).clone();
  return w;
}

int64_t ScoringStartId(const Tokenizer& tokenizer) {
  if (tokenizer.bos_id() >= 0) return tokenizer.bos_id();
  int32_t eot = tokenizer.PieceToId("<|endoftext|>");
  if (eot >= 0) return eot;
  PC_CHECK(tokenizer.eos_id() >= 0, "the tokenizer has neither a BOS nor an end-of-text token to score sentences after");
  return tokenizer.eos_id();
}

int64_t EvalSeqLen(int64_t requested, int64_t context) {
  if (requested > 0) return requested;
  return std::min<int64_t>(kDefaultEvalSeqLen, std::max<int64_t>(1, context));
}

}  // namespace pc
