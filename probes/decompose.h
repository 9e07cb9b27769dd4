// probes/decompose.h — `perpcomp probe decompose`: how much of each layer's update moves the hidden
// state along itself (parallel) and how much turns it (perpendicular). Definitions in docs/SCIENCE.md
// ("Decomposition"):
//
// Residual space, per token, for the attention and the MLP update Δ of a layer against the
// incoming residual state h (the state the sublayer reads):
//   Δ∥ = c·h with c = Δ·h / ‖h‖² (the signed parallel coefficient: h + Δ∥ = (1 + c)·h),
//   Δ⊥ = Δ − Δ∥,  cos = Δ·h / (‖Δ‖‖h‖)  (the signed parallel part relative to ‖Δ‖, cos² = ‖Δ∥‖²/‖Δ‖²).
//   Per layer: parallel share = Σ‖Δ∥‖² / Σ‖Δ‖², perpendicular share = Σ‖Δ⊥‖² / Σ‖Δ‖² (each computed
//   directly; they add up to 1 to rounding), and the distributions of c and cos over tokens.
// Attention value space, per head, for query token i: its attention output o_i = Σ_j a_ij·v_j
// against its own value vector v_i, the same quantities, and the self weight a_ii.
// Tokens with ‖h‖ = 0 or ‖Δ‖ = 0 (‖v_i‖ = 0 or ‖o_i‖ = 0) are skipped and counted.
#pragma once

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "model/model.h"
#include "probes/layers.h"
#include "probes/probe_forward.h"

namespace pc::probes {

// Per-token split of vectors x against reference directions r, accumulated over forwards.
struct DirectionalAccum {
  int64_t tokens = 0, skipped = 0;
  double sum_sq = 0, sum_par = 0, sum_perp = 0;  // Σ‖x‖², Σ‖x∥‖², Σ‖x⊥‖² over valid tokens
  double sum_rel_norm = 0;                       // Σ ‖x‖/‖r‖
  std::vector<float> coef;                       // c = x·r/‖r‖² per valid token
  std::vector<float> cos;                        // x·r/(‖x‖‖r‖) per valid token

  // x, r: (N, d) float64.
  void Add(const at::Tensor& x, const at::Tensor& r);
  double parallel_share() const;       // NaN without valid tokens
  double perpendicular_share() const;
  double mean_rel_norm() const;
};

struct UpdateDecomposition {
  int layer = 0;
  std::string sublayer;  // "attn" | "mlp"
  DirectionalAccum split;
};

struct HeadDecomposition {
  int layer = 0, head = 0;
  DirectionalAccum split;          // o_i against v_i
  std::vector<float> self_weight;  // a_ii of every token (valid or not)
};

struct DecomposeOptions {
  LayerRange layers;
  bool value_space = true;  // also the per-head value-space split
};

struct DecomposeResult {
  LayerRange layers;
  int64_t tokens = 0;                        // tokens seen per site (W × T)
  std::vector<UpdateDecomposition> updates;  // layer-major: attn, mlp
  std::vector<HeadDecomposition> heads;      // layer-major, head order
};

// Observes the updates (and attention internals) of every forward it is passed to.
class DecomposeHooks : public ForwardHooks {
 public:
  DecomposeHooks(const Model& model, const DecomposeOptions& options);
  bool Wants(SiteKind kind) const override;
  at::Tensor At(const Site& site, const at::Tensor& x, const at::Tensor& incoming) override;
  bool WantsAttention(int layer) const override;
  at::Tensor AttentionContext(int layer, const at::Tensor& probs, const at::Tensor& v, const at::Tensor& ctx) override;
  DecomposeResult Take();

 private:
  DecomposeOptions options_;
  int heads_ = 0;
  DecomposeResult result_;
};

// Runs the windows of `in` (its pairs are not used) through the model with DecomposeHooks.
DecomposeResult Decompose(Model& model, const ProbeInputs& in, const DecomposeOptions& options);

}  // namespace pc::probes
