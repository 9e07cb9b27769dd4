// compress/awq_search.h — the numerical pieces of AWQ: the scale formula, the grid search over
// α with an isotropic or directional loss, and the weight-clipping search.
//
// llm-awq (docs/AWQ.md): s = mean|x|^α, clamp ≥ 1e-4, s /= √(max s · min s), members
// W ← Q(W·s)/s, loss = mean squared error of the inspected module's output, α = i/n_grid for
// i = 0..n_grid−1, best α kept with a strict "<". AutoAWQ's duo scaling (§2):
// s = mean|x|^α / (w_mean^(1−α) + 1e-4), w_mean = mean over the members' rows of |w| / (max|w| of
// its quantization group + 1e-6); non-finite scales become 1.
// Perpendicular-aware loss: e = ŷ − y split per token against the original output y
// (docs/METRICS.md): λ∥·Σ par + λ⊥·Σ perp, each divided by the element count.
#pragma once

#include <ATen/ATen.h>

#include <functional>
#include <vector>

#include "compress/quantizer.h"
#include "model/model.h"

namespace pc::awq {

// The shared quantizer, optionally with the group scales rounded to float16 first (AutoAWQ keeps
// fp16 scales; with them the awq-gemm export reproduces the fake-quantized weights bit for bit).
at::Tensor QuantizeWeight(const at::Tensor& w, const QuantSpec& spec, bool f16_scales);

// (in,) float32: mean over the rows of every member of |w| / (max |w| of its group + 1e-6).
at::Tensor DuoWeightMean(const std::vector<at::Tensor>& weights, const QuantSpec& spec);
// (in,) float32 scales for one α. `w_mean` undefined: llm-awq's x_mean^α.
at::Tensor AwqScales(const at::Tensor& x_mean, const at::Tensor& w_mean, double alpha);

// Sums of the per-token directional split over tokens (float64).
struct DirSums {
  double iso = 0, par = 0, perp = 0;
  int64_t elements = 0;  // tokens × features: the divisor of llm-awq's mean
  void Add(const DirSums& o) {
    iso += o.iso;
    par += o.par;
    perp += o.perp;
    elements += o.elements;
  }
};
// Per-token inverse norms 1/‖y‖ of a reference y (n, d), 0 where ‖y‖ = 0 (those tokens count
// entirely as perpendicular, as core/directional.h treats them).
at::Tensor InverseNorms(const at::Tensor& y);
// e, y: (n, d); inv: (n,) from InverseNorms(y). Per token in float32: iso = ‖e‖², p = e·y/‖y‖,
// par = p², perp = ‖e − p·y/‖y‖‖² (computed so, as SplitError does); summed in float64.
DirSums SplitSums(const at::Tensor& e, const at::Tensor& y, const at::Tensor& inv);

struct SearchOptions {
  QuantSpec spec;
  bool f16_scales = false;
  int n_grid = 20;
  double fixed_alpha = -1;  // >= 0: evaluate only this α
  bool duo = false;
  // Which α are tried. kLlmAwq: α = i/n_grid, i = 0..n_grid−1, all in the duo or the plain form.
  // kLlmCompressor (llm-compressor's AWQModifier): with duo, first s = 1 (α = 0 in the plain form),
  // then the duo form at α = i/(n_grid−2), i = 0..n_grid−2 (so α = 1 is tried); without duo,
  // α = i/(n_grid−1), i = 0..n_grid−1. Both grids have n_grid points.
  enum class Grid { kLlmAwq, kLlmCompressor };
  Grid grid = Grid::kLlmAwq;
  double lambda_par = 1, lambda_perp = 1;
};

// The grid points (α, duo form?) that SearchScales tries, in order.
std::vector<std::pair<double, bool>> GridPoints(const SearchOptions& o);

struct SearchResult {
  std::vector<double> alpha, objective, iso, par, perp;  // per grid point; sums / elements
  std::vector<double> duo;  // per grid point: 1 where the duo form was used, 0 for x_mean^α
  int best = -1;
  at::Tensor scales;  // (in,) float32 at the best α
  double w_mean_min = 0;  // duo only: smallest w_mean (diagnostics)
};

// Loss of the inspected module over all calibration tokens with the members' current weights.
using EvaluateFn = std::function<DirSums()>;

// Grid search for one group. `members` get W ← Q(W·s)/s for each α, are evaluated, and are
// restored to their original tensors afterwards. `what` names the group in errors.
SearchResult SearchScales(const std::vector<Linear*>& members, const at::Tensor& x_mean, const SearchOptions& o,
                          const EvaluateFn& evaluate, const std::string& what);
// λ∥·par + λ⊥·perp, or λ·iso when λ∥ = λ⊥ = λ (llm-awq's MSE exactly, without the rounding of par + perp).
double Objective(const DirSums& s, double lambda_par, double lambda_perp);

// ---- clipping (llm-awq auto_clip) ----------------------------------------------------------
// Shrink step i in 0..steps−1 tries max_val = max|w| · (1 − i/20) per (row, group), clamps w to
// [−max_val, max_val], quantizes and keeps the step with the smallest mean over tokens of the
// squared error of the group's partial dot products (first one on ties).
struct ClipResult {
  at::Tensor max_val;  // (rows, groups) float32
  at::Tensor step;     // (rows, groups) int64 chosen shrink step
};
// w (rows, in) the (scaled) weights; x (n, in) the sampled (scaled) inputs.
ClipResult SearchClip(const at::Tensor& w, const at::Tensor& x, const QuantSpec& spec, bool f16_scales, int steps,
                      const std::string& what = "awq clip");
// w clamped per (row, group) to [−max_val, max_val]; returns a new tensor of w's dtype.
at::Tensor ApplyClip(const at::Tensor& w, const at::Tensor& max_val, const QuantSpec& spec);
// Shrink factor of step i: 1 − i/20.
inline double ShrinkFactor(int64_t step) { return 1.0 - static_cast<double>(step) / 20.0; }

}  // namespace pc::awq
