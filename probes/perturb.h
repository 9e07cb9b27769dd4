// probes/perturb.h — `perpcomp probe perturb`: L2-matched perturbation of the hidden states output by
// the chosen layers (docs/SCIENCE.md "Direction vs magnitude"). For every token with hidden state h
// (the residual stream after a block) and a distance δ:
//   magnitude: h' = h·(1 + s·δ/‖h‖), s = ±1 drawn per token          (‖h' − h‖ = δ, direction kept)
//   direction: h' = cos θ·h + ‖h‖·sin θ·n̂, n̂ a random unit vector ⊥ h drawn per token,
//              θ = 2·asin(δ / (2‖h‖))                                 (‖h' − h‖ = δ, ‖h'‖ = ‖h‖)
// matched exactly per token (the seed notebook matched the mean over tokens). A rotation cannot move
// a token with ‖h‖ < δ/2 by δ: such tokens are left unperturbed by BOTH kinds (so the two kinds perturb
// the same tokens) and counted. All listed layers are perturbed in the same forward.
// Repair re-runs a perturbed forward with the attention updates, or the norm outputs (both norms of a
// pre-norm block), of the repair layers replaced by those of the clean forward on the same batch.
#pragma once

#include <ATen/ATen.h>

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "model/model.h"
#include "probes/layers.h"
#include "probes/probe_forward.h"
#include "probes/stats.h"

namespace pc::probes {

enum class PerturbKind { kMagnitude, kDirection };
const char* PerturbKindName(PerturbKind kind);  // "magnitude" | "direction"
// "magnitude,direction" (either or both); errors name `what`.
std::vector<PerturbKind> ParsePerturbKinds(const std::string& text, const std::string& what);

enum class RepairKind { kNone, kAttention, kNorm };
const char* RepairKindName(RepairKind kind);  // "none" | "attention" | "norm"
// "attention,norm", "attention", "norm" or "none" (an empty list); errors name `what`.
std::vector<RepairKind> ParseRepairKinds(const std::string& text, const std::string& what);

struct PerturbedStates {
  at::Tensor h;        // (N, d) in the input's dtype
  at::Tensor skipped;  // (N,) bool: left unchanged: ‖h‖ < δ/2, or (magnitude) drawn shrinking with ‖h‖ ≤ δ
  at::Tensor reversing;  // (N,) bool: magnitude with sign −1 and ‖h‖ ≤ δ (1 − δ/‖h‖ ≤ 0 would reverse or zero
                         // h, so its direction would not be kept): among `skipped`
};
// The perturbation of the rows of h (N, d) by exactly δ (>= 0; 0 is the identity), computed in float64; `gen` draws the
// signs (magnitude) and the normals (direction).
PerturbedStates PerturbStates(const at::Tensor& h, PerturbKind kind, double delta, at::Generator& gen);

// The realised displacement ‖h' − h‖ of the perturbed tokens (in the model's dtype), against δ, over
// the text windows (batches keyed below kPairKeyBase; minimal-pair batches hold padding).
struct DisplacementStats {
  int64_t tokens = 0;   // perturbed token states (summed over layers and forwards)
  int64_t skipped = 0;  // token states left unperturbed (‖h‖ < δ/2, or a reversing magnitude draw)
  int64_t skipped_reversing = 0;  // of those: magnitude draws with sign −1 and ‖h‖ ≤ δ
  std::map<int, std::pair<int64_t, int64_t>> skipped_by_layer;  // layer -> (skipped, skipped_reversing)
  double max_rel_error = 0;  // max |‖h' − h‖ − δ| / δ over perturbed tokens (0 when δ = 0)
  double max_norm_rel_change = 0;  // direction: max |‖h'‖ − ‖h‖| / ‖h‖ (0 for magnitude)
};

// Records, per forward, the tensors at the sites a repair restores: the attention updates or the
// norm outputs of `layers`. Clear() before each clean forward.
class CleanRecorder : public ForwardHooks {
 public:
  CleanRecorder(RepairKind kind, LayerRange layers) : kind_(kind), layers_(layers) {}
  bool Wants(SiteKind kind) const override;
  at::Tensor At(const Site& site, const at::Tensor& x, const at::Tensor& incoming) override;
  void Clear() { cache_.clear(); }
  // The recorded tensor; asserts it was recorded.
  const at::Tensor& Get(const Site& site) const;

 private:
  RepairKind kind_;
  LayerRange layers_;
  std::map<std::tuple<int, int, int>, at::Tensor> cache_;  // (kind, layer, index) -> tensor
};

// Perturbs the block outputs of `layers` by one kind and δ; optionally repairs from a CleanRecorder.
// The draws for layer l of the batch numbered `key` come from a generator seeded by (seed, key, l),
// so a repaired run sees exactly the perturbation of the unrepaired one.
class PerturbHooks : public ForwardHooks {
 public:
  PerturbHooks(LayerRange layers, PerturbKind kind, double delta, uint64_t seed);
  void SetBatch(uint64_t key) { key_ = key; }
  void SetRepair(RepairKind kind, LayerRange layers, const CleanRecorder* clean);
  bool Wants(SiteKind kind) const override;
  at::Tensor At(const Site& site, const at::Tensor& x, const at::Tensor& incoming) override;
  const DisplacementStats& displacement() const { return stats_; }

 private:
  LayerRange layers_;
  PerturbKind kind_;
  double delta_;
  uint64_t seed_, key_ = 0;
  RepairKind repair_ = RepairKind::kNone;
  LayerRange repair_layers_;
  const CleanRecorder* clean_ = nullptr;
  DisplacementStats stats_;
};

struct PerturbOptions {
  LayerRange layers;                  // perturbed block outputs
  std::vector<double> deltas;         // each > 0
  int seeds = 3;                      // seeds seed .. seed + seeds − 1
  uint64_t seed = 0;
  std::vector<PerturbKind> kinds = {PerturbKind::kMagnitude, PerturbKind::kDirection};
  std::vector<RepairKind> repairs = {RepairKind::kAttention, RepairKind::kNorm};
  LayerRange repair_layers;           // default (count 0): the perturbed layers, as the seed notebook
  // Errors: layers out of range (naming the model's layer count), δ <= 0 or not finite, seeds < 1,
  // norm repair on a post-norm model (its norm outputs are the residual stream itself).
  void Validate(const Model& model) const;
};

struct PerturbRun {
  double delta = 0;
  PerturbKind kind = PerturbKind::kMagnitude;
  uint64_t seed = 0;
  RepairKind repair = RepairKind::kNone;
  ProbeScore score;
  DisplacementStats displacement;
  double damage = kNaN;         // loss − baseline loss
  double accuracy_drop = kNaN;  // baseline accuracy − accuracy
};

struct PerturbSummary {  // per (δ, kind), unrepaired, over seeds
  double delta = 0;
  PerturbKind kind = PerturbKind::kMagnitude;
  MeanStd damage, accuracy_drop;
  int64_t tokens = 0, skipped = 0;  // token states of one seed's run
  int64_t skipped_reversing = 0;     // of the skipped: magnitude draws that would reverse h
};

struct RepairSummary {  // per (δ, kind, repair), over seeds
  double delta = 0;
  PerturbKind kind = PerturbKind::kMagnitude;
  RepairKind repair = RepairKind::kAttention;
  MeanStd damage_unrepaired, damage_repaired;
  MeanStd recovered;           // (damage − repaired damage) / damage per seed (NaN seeds left out)
  MeanStd accuracy_recovered;  // (drop − repaired drop) / drop per seed, where the drop is > 0
};

struct LayerNorms {  // ‖h‖ of the clean block outputs over the text windows
  int layer = 0;
  Summary norm;
};

struct PerturbResult {
  ProbeScore baseline;
  LayerRange layers, repair_layers;
  std::vector<LayerNorms> norms;  // every layer
  std::vector<PerturbRun> runs;   // δ-major, then seed, kind, repair (none first)
  std::vector<PerturbSummary> summary;
  std::vector<double> loss_ratio;  // per δ: mean direction damage / mean magnitude damage (NaN unless both kinds)
  std::vector<RepairSummary> repair;
};

PerturbResult RunPerturb(Model& model, const ProbeInputs& in, const PerturbOptions& options);

}  // namespace pc::probes
