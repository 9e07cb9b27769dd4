// compress/hessian.h — the layer Hessian of GPTQ and SparseGPT and the factor of its inverse
// that both walk column by column (docs/PRUNING.md).
//
//   H = (2/n) Σ_t x_t x_tᵀ                         (n calibration tokens; the engine's float64 Gram)
//   dead columns (H_jj = 0): H_jj := 1 (decoupled; the caller decides what to do with their weights)
//   H += damp · mean(diag H) · I                    (damp = 0.01 by default, "percdamp")
//   U  = upper Cholesky factor of H⁻¹, H⁻¹ = UᵀU    (Cholesky of H, cholesky_inverse, Cholesky upper)
// When a Cholesky factorisation fails or gives non-finite values, the damping is multiplied by 10
// (or set to 1e-4 when it was 0) and the factorisation retried, at most 8 times, each retry logged.
// No exception-based API: LibTorch's linalg_cholesky_ex reports failure by its info tensor.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <functional>
#include <string>

#include "compress/method.h"

namespace pc {

struct LayerHessian {
  at::Tensor h;     // (in, in) float64, scaled by 2/n, dead columns fixed, not yet damped
  at::Tensor dead;  // (in,) bool: columns whose input was 0 on every calibration token
  int64_t dead_count = 0;
};

// From the engine's Σ x xᵀ (in, in) float64 over `tokens` tokens. `what` names the linear in errors.
LayerHessian PrepareHessian(const at::Tensor& gram, int64_t tokens, const std::string& what);

struct InverseFactor {
  at::Tensor upper;      // (in, in) float32: U, the upper Cholesky factor of (H + damping)⁻¹
  double damp_used = 0;  // the fraction of mean(diag H) finally added
  int retries = 0;       // factorisations retried with more damping
};

// Damps `h` (float64, not modified) and factors its inverse; `what` names the linear in logs/errors.
InverseFactor InverseUpperFactor(const at::Tensor& h, double damp, const std::string& what);

// The Hessian of `stats` (PrepareHessian), its columns walked by diag(H) descending when
// `act_order` (perm: walk position -> original column; undefined otherwise), and the factor of
// its damped inverse (InverseUpperFactor) in that order.
struct HessianFactor {
  LayerHessian hess;
  at::Tensor perm;    // (in,) int64, or undefined
  InverseFactor inv;  // of hess.h permuted by perm
};

// HessianFactor of `stats`, computed for the first linear that asks and kept in stats.derived for
// the linears that share those statistics (q, k, v; gate, up), so the factorisation runs once
// per input. `what` names the first asking linear in warnings and errors.
const HessianFactor& SharedHessianFactor(const InputStats& stats, double damp, bool act_order, const std::string& what);

// Effective column block: `block` rounded down to a multiple of `align` (at least `align`), so that
// windows or groups of `align` columns never straddle two blocks. align <= 1: `block`.
int64_t AlignedBlock(int64_t block, int64_t align);

// The column-by-column walk of GPTQ and SparseGPT (lazy batch updates). `wt` (in, out) float32
// is the weight transposed, so that every input column is a contiguous row; it is overwritten with
// the result. For each block [i1, i2) of `block` columns, with W1 its current columns (count, out):
//   on_block(i1, i2, W1)                 before its columns (SparseGPT's block-wide mask);
//   for each column c = i1 + i:
//     q   = target(c, i, W1)             (out,) the column's compressed value
//     err = (W1[i] − q) / U_cc,  W1[i] = q,  W1[i+1:] −= U[c, c+1:i2]ᵀ ⊗ err
//   W[i2:] −= U[i1:i2, i2:]ᵀ · Err       (the lazy update of the later columns)
// Returns the reference's "error" Σ (w − q)² / U_cc² / 2. `what` names the walk on the progress
// line ("gptq columns model.layers.3.mlp.up_proj"), which it ticks per column.
using BlockFn = std::function<void(int64_t i1, int64_t i2, const at::Tensor& w1)>;
using ColumnFn = std::function<at::Tensor(int64_t col, int64_t i, const at::Tensor& w1)>;
double ObsColumnWalk(at::Tensor& wt, const at::Tensor& upper, int64_t block, const BlockFn& on_block,
                     const ColumnFn& target, const std::string& what);

}  // namespace pc
