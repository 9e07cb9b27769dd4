// metrics/split_rows.h — core's directional split (core/directional.h, SplitError) evaluated
// row by row in one fused float64 pass, plus the norms and the dot product the measurement
// needs (relative forms, cosine, norm ratio).
//
// Why not call SplitError directly: it materialises about a dozen (N, d) float64 temporaries;
// at ~110 sites × 2 error kinds per token (Pythia-160M, logits of 50304 included) that is
// several forward passes worth of memory traffic. This kernel reads each input once per pass
// and computes exactly SplitError's quantities (tests/metrics/split_rows_test.cc compares them
// to SplitError at 1e-12), so there is still one definition: core's.
//
// Per row (token), with e = out − ref in float64 and y the direction:
//   iso = ‖e‖², p = e·u (u = y/‖y‖), par = p², perp = ‖e − p·u‖² (computed so, second pass),
//   dir_sq = ‖y‖², ref_sq = ‖ref‖², out_sq = ‖out‖², dot = out·ref.
// Rows with ‖y‖ = 0 have p = par = 0 and perp = iso (as SplitError).
#pragma once

#include <ATen/ATen.h>

namespace pc {

struct RowSplit {
  at::Tensor iso, p, par, perp;      // (N,) float64, as SplitError
  at::Tensor dir_sq;                 // (N,) ‖direction‖²
  at::Tensor ref_sq, out_sq, dot;    // (N,) ‖ref‖², ‖out‖², out·ref
  int64_t rows() const { return iso.size(0); }
};

// out, ref: (..., d) of the same shape; direction: the same shape, or undefined for the
// "self" frame (direction = ref). Any floating dtype (converted to float32 when not float32).
// Leading dimensions are flattened to N rows in row-major order.
RowSplit SplitRows(const at::Tensor& out, const at::Tensor& ref, const at::Tensor& direction = at::Tensor());

}  // namespace pc
