// core/directional.h — the directional kernel: per-token split of an error vector into the
// part parallel to a reference direction and the part perpendicular to it.
//
// Definitions (docs/METRICS.md): for a token, y the reference vector (the
// direction), e the error (ŷ − y for the "self" frame, Δ̂ − Δ for the "incoming" frame
// whose direction is the incoming hidden state h), u = y/‖y‖:
//   iso = ‖e‖²,  p = e·u (signed parallel),  par = p²,  perp = ‖e − p·u‖²  (computed so,
//   not as iso − par). Tokens with ‖y‖ = 0 are invalid (skipped and counted by callers).
// All per-token results are float64 whatever the input dtype.
#pragma once

#include <ATen/ATen.h>

namespace pc {

struct DirectionalSplit {
  at::Tensor iso;     // (N,) float64
  at::Tensor p;       // (N,) float64, signed parallel coefficient e·u
  at::Tensor par;     // (N,) float64
  at::Tensor perp;    // (N,) float64
  at::Tensor dir_sq;  // (N,) float64, ‖y‖² of the direction
  at::Tensor valid;   // (N,) bool, ‖y‖ > 0; invalid tokens have p = par = 0, perp = iso
};

// error: (N, d) e;  direction: (N, d) y. Any leading shape is flattened to N.
DirectionalSplit SplitError(const at::Tensor& error, const at::Tensor& direction);

// Frame "self": e = out − ref, direction = ref.
DirectionalSplit SplitAgainstSelf(const at::Tensor& ref, const at::Tensor& out);

// Δ∥ = (Δ·h / ‖h‖²)·h per token along the last dimension, in Δ's dtype and differentiable
// (the projection coefficient is part of the function). Tokens with ‖h‖ = 0 give Δ∥ = 0.
// delta, h: (..., d) of the same shape.
at::Tensor ParallelPart(const at::Tensor& delta, const at::Tensor& h);

// alpha·Δ∥ + beta·Δ⊥ with Δ⊥ = Δ − Δ∥ (docs/SCIENCE.md, `--parallel-scale`).
at::Tensor ScaleParallelPerp(const at::Tensor& delta, const at::Tensor& h, double alpha, double beta);

}  // namespace pc
