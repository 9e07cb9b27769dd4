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
#include <nlohmann/json.hpp>
#include <vector>

namespace pc {

struct TokenLogitStats {
  at::Tensor nll_ref;  // (B, T−1) float64
  at::Tensor nll;      // (B, T−1) float64
  at::Tensor kl;       // (B, T−1) float64, KL(ref ‖ model) in nats, Σ_v p_ref(v)·(log p_ref(v) − log p(v))
  at::Tensor top1;     // (B, T−1) uint8, argmax equal (ties: the lowest id, as at::argmax)
  at::Tensor dp;       // (B, T−1) float64, Δp = p_model(next token) − p_ref(next token)
  // (B, T−1) float64, an upper bound on the per-token KL when `kl` is computed from a compact
  // reference (metrics/kld_base.h: `kl` is then a lower bound); undefined when `kl` is exact.
  at::Tensor kl_upper;
};

// ref_logits, logits: (B, T, V); tokens: (B, T) int64.
TokenLogitStats CompareLogits(const at::Tensor& ref_logits, const at::Tensor& logits, const at::Tensor& tokens);

// The model's side of the per-token statistics, shared by CompareLogits and the compact reference
// of `perpcomp kld` (metrics/kld_base.h): from the model's logits (B, T, V) and the reference's
// next-token NLL `s.nll_ref` (B, T−1) float64 (set before the call) and top-1 ids `ref_top1`
// (B, T−1) int64, sets s.nll, s.dp, s.top1 and returns the model's float32 log-softmax
// (B, T−1, V). The NLL is NextTokenNll's (metrics/perplexity.h): float32 log-softmax, gathered.
at::Tensor ModelTokenStats(const at::Tensor& logits, const at::Tensor& tokens, const at::Tensor& ref_top1,
                           TokenLogitStats& s);

// The reference's side, as CompareLogits computes it: next-token NLL (B, T−1) float64 from the
// float32 log-softmax `lr` (B, T−1, V) and tokens (B, T).
at::Tensor TargetNll(const at::Tensor& lr, const at::Tensor& tokens);

struct DownstreamSummary {
  int64_t tokens = 0;  // predicted tokens
  double ref_mean_nll = 0, mean_nll = 0, delta_nll = 0;  // nats per token; delta = model − reference
  // Standard errors of delta_nll and kl_mean over windows: the sample standard deviation of the
  // per-window means divided by √windows (tokens of a window are not independent; windows are).
  // NaN with fewer than 2 windows.
  int64_t windows = 0;
  double delta_nll_se = 0, kl_mean_se = 0;
  // (windows) the per-window means of ΔNLL and KL, in window order: two models evaluated on the
  // same windows are compared window by window (a paired difference) from these.
  std::vector<double> window_delta_nll, window_kl;
  double ref_ppl = 0, ppl = 0;
  double ppl_ratio = 0;                   // ppl / ref_ppl
  double kl_mean = 0, kl_p50 = 0, kl_p90 = 0, kl_p99 = 0, kl_max = 0;
  double kl_upper_mean = 0;               // mean of the per-token upper bounds (= kl_mean when exact)
  bool kl_exact = true;                   // false: KL from a compact (top-k) reference, kl_* lower bounds
  double top1_agreement = 0;  // fraction of tokens ("same top token")
  // Δp = p_model − p_ref of the next token (llama.cpp's perplexity --kl-divergence statistics).
  double dp_mean = 0, dp_rms = 0, dp_min = 0, dp_max = 0;
  double dp_p1 = 0, dp_p5 = 0, dp_p10 = 0, dp_p25 = 0, dp_p50 = 0, dp_p75 = 0, dp_p90 = 0, dp_p95 = 0, dp_p99 = 0;
};

// The summary under the JSON keys of `eval --reference` (docs/METRICS.md "Downstream"):
// reference_ppl, reference_mean_nll, delta_nll, kl_mean, kl_p50, ..., top1_agreement, dp_*, and the
// per-window arrays window_delta_nll and window_kl.
nlohmann::json DownstreamJson(const DownstreamSummary& d);

// Streams batches of TokenLogitStats (each row one window, all of the same length); keeps per-token
// KL and Δp (float64) for exact percentiles and per-window means of ΔNLL and KL for the standard errors.
class DownstreamAccumulator {
 public:
  void Add(const TokenLogitStats& s);
  DownstreamSummary Finish() const;

 private:
  int64_t tokens_ = 0, agree_ = 0;
  double sum_nll_ref_ = 0, sum_nll_ = 0, sum_kl_ = 0, sum_kl_upper_ = 0;
  bool kl_exact_ = true;
  std::vector<double> kl_, dp_;
  std::vector<double> window_dnll_, window_kl_;  // (windows) per-window means
};

}  // namespace pc
