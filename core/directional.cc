#include "core/directional.h"

#include "core/error.h"

namespace pc {

DirectionalSplit SplitError(const at::Tensor& error, const at::Tensor& direction) {
  PC_CHECK(error.sizes() == direction.sizes(), "directional split: error shape ", error.sizes(),
           " differs from direction shape ", direction.sizes());
  PC_CHECK(error.dim() >= 1, "directional split: expected tensors with a feature dimension");
  const int64_t d = error.size(-1);
  at::Tensor e = error.reshape({-1, d}).to(at::kDouble);      // (N, d)
  at::Tensor y = direction.reshape({-1, d}).to(at::kDouble);  // (N, d)
  DirectionalSplit s;
  s.dir_sq = (y * y).sum(-1);                                 // (N,)
  s.valid = s.dir_sq > 0;
  at::Tensor norm = s.dir_sq.sqrt();
  at::Tensor inv = at::where(s.valid, 1.0 / norm, at::zeros_like(norm));
  at::Tensor u = y * inv.unsqueeze(-1);                       // (N, d), zero rows where invalid
  s.iso = (e * e).sum(-1);
  s.p = (e * u).sum(-1);
  s.par = s.p * s.p;
  at::Tensor e_perp = e - s.p.unsqueeze(-1) * u;
  s.perp = (e_perp * e_perp).sum(-1);
  return s;
}

DirectionalSplit SplitAgainstSelf(const at::Tensor& ref, const at::Tensor& out) {
  PC_CHECK(ref.sizes() == out.sizes(), "directional split: reference shape ", ref.sizes(),
           " differs from output shape ", out.sizes());
  return SplitError(out.to(at::kDouble) - ref.to(at::kDouble), ref);
}

at::Tensor ParallelPart(const at::Tensor& delta, const at::Tensor& h) {
  PC_CHECK(delta.sizes() == h.sizes(), "parallel part: update shape ", delta.sizes(), " differs from hidden shape ",
           h.sizes());
  at::Tensor hh = (h * h).sum(-1, /*keepdim=*/true);
  at::Tensor dh = (delta * h).sum(-1, /*keepdim=*/true);
  // Where ‖h‖ = 0 the coefficient is 0 (and so is its gradient): divide by 1 there.
  at::Tensor safe = at::where(hh > 0, hh, at::ones_like(hh));
  at::Tensor coef = at::where(hh > 0, dh / safe, at::zeros_like(dh));
  return coef * h;
}

at::Tensor ScaleParallelPerp(const at::Tensor& delta, const at::Tensor& h, double alpha, double beta) {
  at::Tensor par = ParallelPart(delta, h);
  return par * alpha + (delta - par) * beta;
}

}  // namespace pc
