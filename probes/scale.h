// probes/scale.h — `perpcomp probe scale`: the model's loss and minimal-pair accuracy while the
// parallel part of its updates is scaled by α and the perpendicular part by β (docs/SCIENCE.md
// "Scaling"), in one of two spaces:
//   residual: every attention / MLP update Δ of the chosen layers against the incoming residual state
//             h: Δ → α·Δ∥ + β·Δ⊥ (core/directional.h ScaleParallelPerp);
//   value:    every head's attention output o_i = Σ_j a_ij·v_j against the token's own value vector
//             v_i: o_i → α·o∥ + β·o⊥ (before the output projection).
// and value-space exclude-self scaling: o_i → a_ii·v_i + f·Σ_{j≠i} a_ij·v_j (the direct self-message
// kept, the cross-token aggregation scaled by f).
// Every setting runs through the hooks, also α = β = 1 and f = 1 (no short-circuit): they reproduce
// the plain model to rounding, which the tests check.
#pragma once

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "model/model.h"
#include "probes/layers.h"
#include "probes/probe_forward.h"

namespace pc::probes {

enum class Space { kResidual, kValue };
const char* SpaceName(Space space);  // "residual" | "value"
// Errors name `what` and list the spaces.
Space ParseSpace(const std::string& text, const std::string& what);

struct ScaleSetting {
  enum class Mode { kParallelPerp, kExcludeSelf };
  Mode mode = Mode::kParallelPerp;
  Space space = Space::kResidual;  // kExcludeSelf is always value space
  double alpha = 1, beta = 1;      // kParallelPerp
  double factor = 1;               // kExcludeSelf
};

// o' = α·o∥ + β·o⊥ against the own value vectors. probs (B, H, T, S), v (B, H, S, hd), ctx (B, H, T, hd);
// query t is at key position S − T + t.
at::Tensor ScaleValueSpace(const at::Tensor& probs, const at::Tensor& v, const at::Tensor& ctx, double alpha,
                           double beta);
// o' = a_ii·v_i + f·(o − a_ii·v_i), same shapes.
at::Tensor ExcludeSelf(const at::Tensor& probs, const at::Tensor& v, const at::Tensor& ctx, double factor);

// Applies one setting to the chosen layers of every forward it is passed to.
class ScaleHooks : public ForwardHooks {
 public:
  // attn / mlp: which residual-space updates are scaled (value space acts on attention only).
  ScaleHooks(LayerRange layers, ScaleSetting setting, bool attn = true, bool mlp = true);
  bool Wants(SiteKind kind) const override;
  at::Tensor At(const Site& site, const at::Tensor& x, const at::Tensor& incoming) override;
  bool WantsAttention(int layer) const override;
  at::Tensor AttentionContext(int layer, const at::Tensor& probs, const at::Tensor& v, const at::Tensor& ctx) override;
  int64_t replaced() const { return replaced_; }  // tensors replaced so far

 private:
  LayerRange layers_;
  ScaleSetting setting_;
  bool attn_, mlp_;
  int64_t replaced_ = 0;
};

struct ScaleOptions {
  LayerRange layers;
  Space space = Space::kResidual;
  bool attn = true, mlp = true;  // residual space: scale attention / MLP updates
  std::vector<double> alphas;    // "∥ scaled" rows (β = 1)
  std::vector<double> betas;     // "⊥ scaled" rows (α = 1)
  std::vector<double> factors;   // exclude-self rows (empty: none)
  bool grid = true;              // every α × β (both lists with 1 added) for the heat map
  void Validate(int num_layers) const;
};

struct ScaleRow {
  std::string kind;  // "baseline" | "parallel" | "perpendicular" | "exclude_self"
  ScaleSetting setting;
  ProbeScore score;
};

struct ScaleResult {
  ProbeScore baseline;             // the plain forward (no hooks)
  std::vector<ScaleRow> rows;      // baseline, ∥ at each α, ⊥ at each β, exclude-self at each f
  std::vector<double> grid_alphas, grid_betas;  // sorted, each with 1
  std::vector<ProbeScore> grid;    // [alpha][beta] row-major; empty without ScaleOptions::grid
};

ScaleResult RunScale(Model& model, const ProbeInputs& in, const ScaleOptions& options);

}  // namespace pc::probes
