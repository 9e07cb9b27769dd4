#include "metrics/logit_compare.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/tensor_util.h"
#include "metrics/simd.h"
#include "metrics/site_stats.h"

namespace pc {

namespace {

// KL per row r in begin .. end−1: Σ_v p_ref·(log p_ref − log p), float64 lanes.
PC_SIMD_CLONES void KlRange(const float* lr, const float* lm, const float* pr, int64_t V, int64_t begin, int64_t end,
                            double* kl) {
  for (int64_t r = begin; r < end; ++r) {
    const float* a = lr + r * V;
    const float* b = lm + r * V;
    const float* p = pr + r * V;
    double acc[8] = {};
    int64_t v = 0;
    for (; v + 8 <= V; v += 8) {
      for (int j = 0; j < 8; ++j) acc[j] += static_cast<double>(p[v + j]) * (static_cast<double>(a[v + j]) - b[v + j]);
    }
    for (int j = 0; v < V; ++v, ++j) acc[j] += static_cast<double>(p[v]) * (static_cast<double>(a[v]) - b[v]);
    double t = 0;
    for (double x : acc) t += x;
    kl[r] = t;
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
  // As NextTokenNll (metrics/perplexity.h), sharing the log-softmax with the KL.
  at::Tensor lr = at::log_softmax(ref_logits.narrow(1, 0, T - 1).to(at::kFloat), -1).contiguous();  // (B, T−1, V)
  at::Tensor lm = at::log_softmax(logits.narrow(1, 0, T - 1).to(at::kFloat), -1).contiguous();
  at::Tensor target = tokens.narrow(1, 1, T - 1).unsqueeze(-1);                                   // (B, T−1, 1)
  s.nll_ref = -lr.gather(-1, target).squeeze(-1).to(at::kDouble);                                 // (B, T−1)
  s.nll = -lm.gather(-1, target).squeeze(-1).to(at::kDouble);
  at::Tensor pr = lr.exp();
  const int64_t rows = B * (T - 1);
  s.kl = at::empty({B, T - 1}, at::kDouble);
  const float* plr = lr.data_ptr<float>();
  const float* plm = lm.data_ptr<float>();
  const float* ppr = pr.data_ptr<float>();
  double* pkl = s.kl.data_ptr<double>();
  at::parallel_for(0, rows, std::max<int64_t>(1, 65536 / V),
                   [&](int64_t begin, int64_t end) { KlRange(plr, plm, ppr, V, begin, end, pkl); });
  s.top1 = lr.argmax(-1).eq(lm.argmax(-1)).to(at::kByte);
  return s;
}

void DownstreamAccumulator::Add(const TokenLogitStats& s) {
  const int64_t n = s.kl.numel();
  tokens_ += n;
  sum_nll_ref_ += s.nll_ref.sum().item<double>();
  sum_nll_ += s.nll.sum().item<double>();
  agree_ += s.top1.to(at::kLong).sum().item<int64_t>();
  at::Tensor kl = s.kl.contiguous();
  const double* p = kl.data_ptr<double>();
  for (int64_t i = 0; i < n; ++i) sum_kl_ += p[i];
  kl_.insert(kl_.end(), p, p + n);
}

DownstreamSummary DownstreamAccumulator::Finish() const {
  DownstreamSummary d;
  d.tokens = tokens_;
  if (tokens_ == 0) return d;
  const double n = static_cast<double>(tokens_);
  d.ref_mean_nll = sum_nll_ref_ / n;
  d.mean_nll = sum_nll_ / n;
  d.delta_nll = d.mean_nll - d.ref_mean_nll;
  d.ref_ppl = std::exp(d.ref_mean_nll);
  d.ppl = std::exp(d.mean_nll);
  d.kl_mean = sum_kl_ / n;
  std::vector<double> kl = kl_;
  d.kl_p50 = Percentile(kl, 50);
  d.kl_p90 = Percentile(kl, 90);
  d.kl_p99 = Percentile(kl, 99);
  d.kl_max = *std::max_element(kl.begin(), kl.end());
  d.top1_agreement = static_cast<double>(agree_) / n;
  return d;
}

}  // namespace pc
