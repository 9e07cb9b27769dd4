#include "compress/hessian.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/strings.h"

namespace pc {

LayerHessian PrepareHessian(const at::Tensor& gram, int64_t tokens, const std::string& what) {
  PC_ASSERT(gram.defined() && gram.dim() == 2 && gram.size(0) == gram.size(1), "no Gram matrix for ", what);
  PC_CHECK(tokens > 0, what, ": no calibration tokens reached this linear");
  PC_CHECK(at::isfinite(gram).all().item<bool>(), what,
           ": the Gram matrix of the calibration inputs is not finite (activations overflow)");
  LayerHessian out;
  out.h = gram.to(at::kDouble).mul(2.0 / static_cast<double>(tokens));  // (in, in)
  at::Tensor diag = out.h.diagonal();                                   // view
  out.dead = diag == 0;
  out.dead_count = out.dead.sum().item<int64_t>();
  if (out.dead_count > 0) diag.masked_fill_(out.dead, 1.0);
  return out;
}

namespace {
// (L, ok): lower or upper Cholesky factor of a, without throwing.
std::pair<at::Tensor, bool> Cholesky(const at::Tensor& a, bool upper) {
  auto [factor, info] = at::linalg_cholesky_ex(a, upper, /*check_errors=*/false);
  bool ok = info.item<int64_t>() == 0 && at::isfinite(factor).all().item<bool>();
  return {factor, ok};
}
}  // namespace

InverseFactor InverseUpperFactor(const at::Tensor& h, double damp, const std::string& what) {
  PC_ASSERT(h.scalar_type() == at::kDouble && h.dim() == 2);
  const int64_t in = h.size(0);
  const double mean_diag = h.diagonal().mean().item<double>();
  InverseFactor out;
  double frac = damp;
  const int kMaxRetries = 8;
  for (int attempt = 0; attempt <= kMaxRetries; ++attempt) {
    at::Tensor damped = h.clone();
    damped.diagonal().add_(frac * mean_diag);
    auto [lower, ok] = Cholesky(damped, /*upper=*/false);
    if (ok) {
      at::Tensor inv = at::cholesky_inverse(lower);  // (in, in)
      auto [upper, ok2] = at::isfinite(inv).all().item<bool>() ? Cholesky(inv, /*upper=*/true)
                                                               : std::pair<at::Tensor, bool>{at::Tensor(), false};
      if (ok2) {
        out.upper = upper.to(at::kFloat);
        out.damp_used = frac;
        out.retries = attempt;
        return out;
      }
    }
    const double next = frac > 0 ? frac * 10 : 1e-4;
    if (attempt < kMaxRetries) {
      log::Warn("compress", what, ": the damped Hessian (", in, " x ", in, ", damping ", FormatDouble(frac),
                " of its mean diagonal ", FormatDouble(mean_diag), ") is not positive definite; retrying with ",
                FormatDouble(next));
    }
    frac = next;
  }
  PC_THROW(what, ": the Hessian of the calibration inputs stays singular even with damping ", FormatDouble(frac / 10),
           " of its mean diagonal ", FormatDouble(mean_diag), " (are the calibration inputs all zero or non-finite?)");
}

const HessianFactor& SharedHessianFactor(const InputStats& stats, double damp, bool act_order, const std::string& what) {
  const std::string key = "hessian_factor damp=" + FormatDouble(damp) + (act_order ? " act_order" : "");
  auto it = stats.derived.find(key);
  if (it == stats.derived.end()) {
    auto f = std::make_shared<HessianFactor>();
    f->hess = PrepareHessian(stats.gram, stats.tokens, what);
    at::Tensor h = f->hess.h;
    if (act_order) {
      f->perm = at::argsort(h.diagonal(), /*stable=*/true, /*dim=*/0, /*descending=*/true);
      h = h.index_select(0, f->perm).index_select(1, f->perm);
    }
    f->inv = InverseUpperFactor(h, damp, what);
    it = stats.derived.emplace(key, std::shared_ptr<const void>(std::move(f))).first;
  }
  return *static_cast<const HessianFactor*>(it->second.get());
}

double ObsColumnWalk(at::Tensor& wt, const at::Tensor& upper, int64_t block, const BlockFn& on_block,
                     const ColumnFn& target, const std::string& what) {
  PC_ASSERT(wt.dim() == 2 && wt.scalar_type() == at::kFloat && upper.scalar_type() == at::kFloat &&
            upper.size(0) == wt.size(0) && block >= 1);
  const int64_t in = wt.size(0), out = wt.size(1);
  at::Tensor u = upper.contiguous();
  const float* up = u.data_ptr<float>();
  double loss = 0;
  SubProgress progress(what, in);
  for (int64_t i1 = 0; i1 < in; i1 += block) {
    const int64_t i2 = std::min(in, i1 + block), count = i2 - i1;
    at::Tensor w1 = wt.narrow(0, i1, count).clone();  // (count, out)
    at::Tensor err1 = at::empty_like(w1);             // (count, out)
    at::Tensor u1 = u.narrow(0, i1, count);           // (count, in)
    if (on_block) on_block(i1, i2, w1);
    for (int64_t i = 0; i < count; ++i) {
      const int64_t c = i1 + i;
      const at::Tensor q = target(c, i, w1).contiguous();  // (out,) float32
      PC_ASSERT(q.scalar_type() == at::kFloat && q.numel() == out);
      // err = (W1[i] − q) / U_cc, W1[i] = q: the float operations of at::sub and div_, in one loop.
      float* w = w1.data_ptr<float>() + i * out;
      float* e = err1.data_ptr<float>() + i * out;
      const float* qp = q.data_ptr<float>();
      const float d = up[c * in + c];
      for (int64_t r = 0; r < out; ++r) {
        e[r] = (w[r] - qp[r]) / d;
        w[r] = qp[r];
      }
      if (i + 1 < count) w1.narrow(0, i + 1, count - i - 1).addr_(u1[i].narrow(0, c + 1, count - i - 1), err1[i], 1, -1);
      progress.Add();
    }
    loss += 0.5 * err1.to(at::kDouble).square().sum().item<double>();
    wt.narrow(0, i1, count).copy_(w1);
    if (i2 < in) wt.narrow(0, i2, in - i2).addmm_(u1.narrow(1, i2, in - i2).t(), err1, 1, -1);
  }
  return loss;
}

int64_t AlignedBlock(int64_t block, int64_t align) {
  if (align <= 1) return std::max<int64_t>(1, block);
  return std::max<int64_t>(align, block / align * align);
}

}  // namespace pc
