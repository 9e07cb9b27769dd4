#include "metrics/logit_compare.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/tensor_util.h"
#include "metrics/site_stats.h"

namespace pc {

namespace {

// Standard error of the mean of `v`: sample standard deviation (n − 1) / √n; NaN when n < 2.
double StandardError(const std::vector<double>& v) {
  const size_t n = v.size();
  if (n < 2) return std::numeric_limits<double>::quiet_NaN();
  double mean = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(n);
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return std::sqrt(ss / static_cast<double>(n - 1) / static_cast<double>(n));
}

// KL per row r in begin .. end−1, in float64 from the float32 logits x (reference) and y (model)
// and the reference's probabilities p: with d_v = x_v − y_v (exact in float64) and p normalized in
// float64 (S = Σ p_v),
//   KL = Σ_v p_v (log p_v − log q_v) = Σ_v p_v d_v / S + log1p(Σ_v p_v expm1(−d_v) / S),
// since log Σ e^y − log Σ e^x = log Σ_v p_v e^{−d_v}. Nothing is subtracted that was rounded to
// float32 first (log-softmaxes of two close models differ by less than their rounding), so the
// floor is float64 rounding (docs/METRICS.md "KL"). Row r = (b, t) lies at b·stride_b + t·V.
void KlRange(const float* x, const float* y, const float* pr, int64_t V, int64_t rows_per_window,
             int64_t window_stride, int64_t begin, int64_t end, double* kl) {
  for (int64_t r = begin; r < end; ++r) {
    const int64_t off = (r / rows_per_window) * window_stride + (r % rows_per_window) * V;
    const float* a = x + off;
    const float* b = y + off;
    const float* p = pr + r * V;
    double sum_p = 0, sum_pd = 0, sum_pe = 0;
    for (int64_t v = 0; v < V; ++v) {
      const double pv = p[v];
      const double d = static_cast<double>(a[v]) - static_cast<double>(b[v]);
      sum_p += pv;
      sum_pd += pv * d;
      sum_pe += pv * std::expm1(-d);
    }
    kl[r] = sum_pd / sum_p + std::log1p(sum_pe / sum_p);
  }
}

}  // namespace

TokenLogitStats CompareLogits(const at::Tensor& ref_logits, const at::Tensor& logits, const at::Tensor& tokens) {
  PC_CHECK(ref_logits.sizes() == logits.sizes(), "logits of the reference ", ShapeString(ref_logits.sizes()),
           " and of the model ", ShapeString(logits.sizes()), " differ in shape");
  PC_CHECK(logits.dim() == 3 && tokens.dim() == 2 && tokens.size(0) == logits.size(0) &&
               tokens.size(1) == logits.size(1),
           "compare logits: expected logits (B, T, V) and tokens (B, T), got ", ShapeString(logits.sizes()), " and ",
           ShapeString(tokens.sizes()));
  const int64_t B = logits.size(0), T = logits.size(1), V = logits.size(2);
  PC_CHECK(T >= 2, "compare logits: windows need at least 2 tokens");
  TokenLogitStats s;
  at::Tensor lr = at::log_softmax(ref_logits.narrow(1, 0, T - 1).to(at::kFloat), -1).contiguous();  // (B, T−1, V)
  s.nll_ref = TargetNll(lr, tokens);                                                              // (B, T−1)
  ModelTokenStats(logits, tokens, lr.argmax(-1), s);
  at::Tensor pr = lr.exp();
  const int64_t rows = B * (T - 1);
  s.kl = at::empty({B, T - 1}, at::kDouble);
  // The raw float32 logits (no copy when they are float32 and contiguous, as the forward gives them).
  const at::Tensor x = ref_logits.to(at::kFloat).contiguous(), y = logits.to(at::kFloat).contiguous();  // (B, T, V)
  const float* px = x.data_ptr<float>();
  const float* py = y.data_ptr<float>();
  const float* ppr = pr.data_ptr<float>();
  double* pkl = s.kl.data_ptr<double>();
  at::parallel_for(0, rows, std::max<int64_t>(1, 65536 / V), [&](int64_t begin, int64_t end) {
    KlRange(px, py, ppr, V, T - 1, T * V, begin, end, pkl);
  });
  return s;
}

at::Tensor TargetNll(const at::Tensor& lr, const at::Tensor& tokens) {
  const int64_t T = tokens.size(1);
  at::Tensor target = tokens.narrow(1, 1, T - 1).unsqueeze(-1);  // (B, T−1, 1)
  return -lr.gather(-1, target).squeeze(-1).to(at::kDouble);     // (B, T−1)
}

at::Tensor ModelTokenStats(const at::Tensor& logits, const at::Tensor& tokens, const at::Tensor& ref_top1,
                           TokenLogitStats& s) {
  const int64_t T = logits.size(1);
  PC_ASSERT(s.nll_ref.defined() && s.nll_ref.size(1) == T - 1, "ModelTokenStats: nll_ref first");
  // As NextTokenNll (metrics/perplexity.h), sharing the log-softmax with the KL.
  at::Tensor lm = at::log_softmax(logits.narrow(1, 0, T - 1).to(at::kFloat), -1).contiguous();  // (B, T−1, V)
  s.nll = TargetNll(lm, tokens);
  s.dp = at::exp(-s.nll) - at::exp(-s.nll_ref);
  s.top1 = ref_top1.to(at::kLong).eq(lm.argmax(-1)).to(at::kByte);
  return lm;
}

nlohmann::json DownstreamJson(const DownstreamSummary& d) {
  return {{"reference_ppl", d.ref_ppl},   {"reference_mean_nll", d.ref_mean_nll},
          {"delta_nll", d.delta_nll},     {"ppl_ratio", d.ppl_ratio},
          {"delta_nll_se", d.delta_nll_se}, {"kl_mean_se", d.kl_mean_se},  // NaN is written as null
          {"windows", d.windows},
          {"kl_mean", d.kl_mean},         {"kl_p50", d.kl_p50},
          {"kl_p90", d.kl_p90},           {"kl_p99", d.kl_p99},
          {"kl_max", d.kl_max},           {"kl_upper_mean", d.kl_upper_mean},
          {"kl_exact", d.kl_exact},       {"top1_agreement", d.top1_agreement},
          {"dp_mean", d.dp_mean},         {"dp_rms", d.dp_rms},
          {"dp_min", d.dp_min},           {"dp_p1", d.dp_p1},
          {"dp_p5", d.dp_p5},             {"dp_p10", d.dp_p10},
          {"dp_p25", d.dp_p25},           {"dp_p50", d.dp_p50},
          {"dp_p75", d.dp_p75},           {"dp_p90", d.dp_p90},
          {"dp_p95", d.dp_p95},           {"dp_p99", d.dp_p99},
          {"dp_max", d.dp_max},           {"window_delta_nll", d.window_delta_nll},
          {"window_kl", d.window_kl}};
}

void DownstreamAccumulator::Add(const TokenLogitStats& s) {
  const int64_t n = s.kl.numel();
  tokens_ += n;
  sum_nll_ref_ += s.nll_ref.sum().item<double>();
  sum_nll_ += s.nll.sum().item<double>();
  agree_ += s.top1.to(at::kLong).sum().item<int64_t>();
  PC_ASSERT(s.kl.dim() == 2 && s.nll.sizes() == s.kl.sizes() && s.nll_ref.sizes() == s.kl.sizes(),
            "per-token statistics are (windows, T-1)");
  at::Tensor dnll = (s.nll - s.nll_ref).mean(1).contiguous();  // (B) float64
  at::Tensor wkl = s.kl.mean(1).contiguous();                  // (B) float64
  window_dnll_.insert(window_dnll_.end(), dnll.data_ptr<double>(), dnll.data_ptr<double>() + dnll.numel());
  window_kl_.insert(window_kl_.end(), wkl.data_ptr<double>(), wkl.data_ptr<double>() + wkl.numel());
  at::Tensor kl = s.kl.contiguous();
  const double* p = kl.data_ptr<double>();
  for (int64_t i = 0; i < n; ++i) sum_kl_ += p[i];
  kl_.insert(kl_.end(), p, p + n);
  if (s.kl_upper.defined()) {
    kl_exact_ = false;
    sum_kl_upper_ += s.kl_upper.sum().item<double>();
  } else {
    sum_kl_upper_ += kl.sum().item<double>();
  }
  at::Tensor dp = s.dp.to(at::kDouble).contiguous();
  PC_ASSERT(dp.numel() == n, "Δp and KL of different token counts");
  dp_.insert(dp_.end(), dp.data_ptr<double>(), dp.data_ptr<double>() + n);
}

DownstreamSummary DownstreamAccumulator::Finish() const {
  DownstreamSummary d;
  d.tokens = tokens_;
  if (tokens_ == 0) return d;
  const double n = static_cast<double>(tokens_);
  d.ref_mean_nll = sum_nll_ref_ / n;
  d.mean_nll = sum_nll_ / n;
  d.delta_nll = d.mean_nll - d.ref_mean_nll;
  d.windows = static_cast<int64_t>(window_dnll_.size());
  d.delta_nll_se = StandardError(window_dnll_);
  d.kl_mean_se = StandardError(window_kl_);
  d.window_delta_nll = window_dnll_;
  d.window_kl = window_kl_;
  d.ref_ppl = std::exp(d.ref_mean_nll);
  d.ppl = std::exp(d.mean_nll);
  d.kl_mean = sum_kl_ / n;
  std::vector<double> kl = kl_;
  d.kl_p50 = Percentile(kl, 50);
  d.kl_p90 = Percentile(kl, 90);
  d.kl_p99 = Percentile(kl, 99);
  d.kl_max = *std::max_element(kl.begin(), kl.end());
  d.kl_upper_mean = sum_kl_upper_ / n;
  d.kl_exact = kl_exact_;
  d.ppl_ratio = d.ppl / d.ref_ppl;
  d.top1_agreement = static_cast<double>(agree_) / n;
  std::vector<double> dp = dp_;
  double sum = 0, sum_sq = 0;
  for (double v : dp) {
    sum += v;
    sum_sq += v * v;
  }
  d.dp_mean = sum / n;
  d.dp_rms = std::sqrt(sum_sq / n);
  d.dp_min = *std::min_element(dp.begin(), dp.end());
  d.dp_max = *std::max_element(dp.begin(), dp.end());
  const std::pair<double, double*> q[] = {{1, &d.dp_p1},   {5, &d.dp_p5},   {10, &d.dp_p10},
                                          {25, &d.dp_p25}, {50, &d.dp_p50}, {75, &d.dp_p75},
                                          {90, &d.dp_p90}, {95, &d.dp_p95}, {99, &d.dp_p99}};
  for (const auto& [pct, out] : q) *out = Percentile(dp, pct);
  return d;
}

}  // namespace pc
