// metrics/kld_base.h — `perpcomp kld`: the base model's next-token distributions on a text, saved
// once in compact form (a "kld-base" HDF5 file), then any model compared with them without the
// base model present (docs/METRICS.md "KL against a saved base").
//
// Per predicted token the file keeps the k most probable next tokens with their log-probabilities,
// the probability mass of all other tokens, the NLL of the actual next token and the base's top-1
// id. From them and the model's full logits, CompareCompact gives per token
//   kl       = KL of the coarsened distributions (top-k tokens + one "rest" outcome): a lower bound
//              on the exact KL(base ‖ model) (log-sum inequality);
//   kl_upper = the largest exact KL any base distribution agreeing with the stored data can have
//              (every other token at most as probable as the k-th): an upper bound.
// The exact KL lies in [kl, kl_upper]; both collapse onto it as the rest mass goes to 0. NLL,
// perplexity, Δp and top-1 agreement are exact. The statistics are those of `eval --reference`
// (metrics/logit_compare.h: the model's side and the accumulator are the same code).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

#include "metrics/logit_compare.h"
#include "metrics/minimal_pairs.h"
#include "model/model.h"
#include "model/tokenizer/tokenizer.h"

namespace pc {

inline constexpr int64_t kKldBaseVersion = 1;

// The base's compact next-token distributions for windows (B, T): positions 0 .. T−2 of each.
struct CompactLogits {
  at::Tensor top_ids;    // (B, T−1, k) int32, the k most probable next tokens, most probable first
  at::Tensor top_logp;   // (B, T−1, k) float64, their log-probabilities (float64 log-softmax of the logits)
  at::Tensor tail_mass;  // (B, T−1) float64, the other tokens' probabilities summed (directly, not 1 − Σ top)
  at::Tensor nll;        // (B, T−1) float64, NLL of the next token (as CompareLogits's nll_ref)
  at::Tensor top1;       // (B, T−1) int32, argmax (ties: the lowest id, as CompareLogits)
  int64_t k() const { return top_ids.size(2); }
  CompactLogits Narrow(int64_t first_window, int64_t count) const;
};

// logits (B, T, V) float, tokens (B, T) int64; 1 <= k <= V.
CompactLogits CompactFromLogits(const at::Tensor& logits, const at::Tensor& tokens, int64_t k);

// The model's logits (B, T, V) against the compact base of the same windows: TokenLogitStats with
// kl (lower bound), kl_upper (upper bound), nll_ref, nll, dp and top1 (see the file comment).
TokenLogitStats CompareCompact(const CompactLogits& base, const at::Tensor& logits, const at::Tensor& tokens);

// Everything a kld-base file holds.
struct KldBase {
  std::string model;       // the base model as given (for messages)
  std::string dtype;       // its compute dtype
  int64_t vocab = 0;       // the base model's vocabulary (logit width)
  at::Tensor tokens;       // (W, T) int64, the windows
  std::string tokens_sha256, text_sha256, text_path;
  std::vector<int64_t> tokenizer_probe;  // TokenizerProbe of the base's tokenizer
  CompactLogits logits;    // over all W windows
  // Minimal pairs (pairs == 0: none saved).
  int64_t pairs = 0;
  std::string pairs_sha256, pair_prefix;
  std::vector<double> pair_logp_good, pair_logp_bad;
};

// The ids of a fixed probe text (ASCII, digits, punctuation, whitespace runs, accented and CJK
// characters) with the tokenizer's prefix ids, then its vocabulary size: two tokenizers that read
// this text differently cannot share a base file.
std::vector<int64_t> TokenizerProbe(const Tokenizer& tokenizer);

// sha256 of the pairs' sentences in order and the prefix (which pairs a base was scored on).
std::string PairsSha256(const std::vector<MinimalPair>& pairs, const std::string& prefix);

// Runs `model` over `windows` (batch 0: DefaultEvalBatch) and, when `pairs` is not empty, scores
// them; everything but model/text fields of the result is filled.
KldBase ComputeKldBase(Model& model, const Tokenizer& tokenizer, const at::Tensor& windows, int64_t top_k,
                       int64_t batch, const std::vector<MinimalPair>& pairs, const PairScoringOptions& scoring);

// Written staged (a kill leaves no partial file under `path`), kind "kld-base", with the sha256 of
// every array's bytes as the attribute content_sha256.
void WriteKldBase(const std::string& path, const KldBase& base, bool overwrite);
// Reads and checks: HDF5 structure (read in a child first: store/untrusted.h), kind, version,
// shapes against each other, ids within the vocabulary, and the content checksum. Errors name the file.
KldBase ReadKldBase(const std::string& path);

// Refuses a model whose vocabulary (config) or tokenizer (TokenizerProbe) differs from the base's.
void CheckKldCompatible(const KldBase& base, const std::string& base_path, const ModelConfig& config,
                        const Tokenizer& tokenizer, const std::string& model_name);
// Refuses windows (from re-reading the text) that differ from the base file's.
void CheckKldTokens(const KldBase& base, const std::string& base_path, const at::Tensor& windows,
                    const std::string& text_path);

struct PairFlips {
  int64_t pairs = 0;
  int64_t base_correct = 0, model_correct = 0;
  int64_t right_to_wrong = 0, wrong_to_right = 0;  // verdicts that changed (ties count as wrong)
  double base_accuracy = 0, accuracy = 0;
};
PairFlips CountPairFlips(const std::vector<double>& base_good, const std::vector<double>& base_bad,
                         const std::vector<PairScore>& model);

struct KldResult {
  DownstreamSummary downstream;
  bool has_pairs = false;
  PairFlips flips;
};

// The model against the base on the base's windows (batch 0: DefaultEvalBatch); `pairs` must be the
// base's (PairsSha256 checked) or empty (no pair statistics).
KldResult EvaluateKld(Model& model, const Tokenizer& tokenizer, const KldBase& base, const std::string& base_path,
                      int64_t batch, const std::vector<MinimalPair>& pairs, const PairScoringOptions& scoring);

}  // namespace pc
