// metrics/logit_compare.h — downstream loss of a model against a reference on the same token
// windows (docs/METRICS.md "Downstream loss"; docs/METRICS.md "Downstream"): per predicted token the
// NLL of both models, KL(reference ‖ model) of the next-token distributions and top-1
// agreement; aggregated as means, ΔNLL, perplexities and KL percentiles.
//
// Predicted tokens are positions 0 .. T−2 of every window (the logits at position t predict
// token t+1), as perplexity counts them: windows × (seq_len − 1).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace pc {

struct TokenLogitStats {
  at::Tensor nll_ref;  // (B, T−1) float64
  at::Tensor nll;      // (B, T−1) float64
  at::Tensor kl;       // (B, T−1) float64, KL(ref ‖ model) in nats, Σ_v p_ref(v)·(log p_ref(v) − log p(v))
  at::Tensor top1;     // (B, T−1) uint8, argmax equal (ties: the lowest id, as at::argmax)
};

// ref_logits, logits: (B, T, V); tokens: (B, T) int64.
TokenLogitStats CompareLogits(const at::Tensor& ref_logits, const at::Tensor& logits, const at::Tensor& tokens);

struct DownstreamSummary {
  int64_t tokens = 0;  // predicted tokens
  double ref_mean_nll = 0, mean_nll = 0, delta_nll = 0;  // nats per token; delta = model − reference
  double ref_ppl = 0, ppl = 0;
  double kl_mean = 0, kl_p50 = 0, kl_p90 = 0, kl_p99 = 0, kl_max = 0;
  double top1_agreement = 0;  // fraction of tokens
};

// Streams batches of TokenLogitStats; keeps per-token KL (float64) for exact percentiles.
class DownstreamAccumulator {
 public:
  void Add(const TokenLogitStats& s);
  DownstreamSummary Finish() const;

 private:
  int64_t tokens_ = 0, agree_ = 0;
  double sum_nll_ref_ = 0, sum_nll_ = 0, sum_kl_ = 0;
  std::vector<double> kl_;
};

}  // namespace pc
