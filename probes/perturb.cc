#include "probes/perturb.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>

#include "core/error.h"
#include "core/progress.h"
#include "core/strings.h"

namespace pc::probes {

const char* PerturbKindName(PerturbKind kind) { return kind == PerturbKind::kMagnitude ? "magnitude" : "direction"; }

std::vector<PerturbKind> ParsePerturbKinds(const std::string& text, const std::string& what) {
  std::vector<PerturbKind> out;
  for (const auto& part : Split(text, ',')) {
    const std::string t = Trim(part);
    PerturbKind k;
    if (t == "magnitude") {
      k = PerturbKind::kMagnitude;
    } else if (t == "direction") {
      k = PerturbKind::kDirection;
    } else {
      PC_THROW(what, ": unknown perturbation '", t, "' (expected magnitude, direction or both, comma-separated)");
    }
    PC_CHECK(std::find(out.begin(), out.end(), k) == out.end(), what, ": '", t, "' is listed twice");
    out.push_back(k);
  }
  PC_CHECK(!out.empty(), what, ": expected magnitude, direction or both");
  return out;
}

const char* RepairKindName(RepairKind kind) {
  switch (kind) {
    case RepairKind::kNone: return "none";
    case RepairKind::kAttention: return "attention";
    case RepairKind::kNorm: return "norm";
  }
  return "?";
}

std::vector<RepairKind> ParseRepairKinds(const std::string& text, const std::string& what) {
  if (Trim(text) == "none") return {};
  std::vector<RepairKind> out;
  for (const auto& part : Split(text, ',')) {
    const std::string t = Trim(part);
    RepairKind k;
    if (t == "attention") {
      k = RepairKind::kAttention;
    } else if (t == "norm") {
      k = RepairKind::kNorm;
    } else {
      PC_THROW(what, ": unknown repair '", t, "' (expected attention, norm, both comma-separated, or none)");
    }
    PC_CHECK(std::find(out.begin(), out.end(), k) == out.end(), what, ": '", t, "' is listed twice");
    out.push_back(k);
  }
  PC_CHECK(!out.empty(), what, ": expected attention, norm, both or none");
  return out;
}

PerturbedStates PerturbStates(const at::Tensor& h, PerturbKind kind, double delta, at::Generator& gen) {
  PC_CHECK(delta >= 0 && std::isfinite(delta), "perturbation: delta must be >= 0, got ", delta);
  PC_ASSERT(h.dim() == 2, "perturbation: expected (N, d)");
  const int64_t N = h.size(0), d = h.size(1);
  const auto f64 = at::TensorOptions().dtype(at::kDouble);
  at::Tensor x = h.to(at::kDouble);                       // (N, d)
  at::Tensor norm = x.norm(2, {-1}, /*keepdim=*/true);    // (N, 1)
  at::Tensor skipped = norm < (delta / 2);                // (N, 1)
  at::Tensor safe = at::where(skipped, at::ones_like(norm), norm);
  at::Tensor out;
  at::Tensor reversing = at::zeros_like(skipped);
  if (kind == PerturbKind::kMagnitude) {
    at::Tensor sign = at::empty({N, 1}, f64).bernoulli_(0.5, gen) * 2 - 1;  // (N, 1) ±1
    // h·(1 − δ/‖h‖) with ‖h‖ ≤ δ points the other way (or is 0): not a magnitude change. Such
    // tokens are left alone and counted, not redrawn (a redraw would bias the signs).
    reversing = (sign < 0).logical_and(norm <= delta).logical_and(skipped.logical_not());
    skipped = skipped.logical_or(reversing);
    out = x * (1 + sign * delta / safe);
  } else {
    at::Tensor u = x / safe;                                          // (N, d) unit rows
    at::Tensor r = at::randn({N, d}, gen, f64);                       // (N, d)
    at::Tensor n = r - (r * u).sum(-1, true) * u;                     // ⊥ h
    n = n / n.norm(2, {-1}, true);
    at::Tensor theta = 2 * at::asin((delta / (2 * safe)).clamp_max(1.0));  // (N, 1)
    out = at::cos(theta) * x + safe * at::sin(theta) * n;
  }
  out = at::where(skipped, x, out);
  return PerturbedStates{out.to(h.scalar_type()), skipped.squeeze(-1), reversing.squeeze(-1)};
}

// ---- repair recording -------------------------------------------------------------------------

bool CleanRecorder::Wants(SiteKind kind) const {
  return (kind_ == RepairKind::kAttention && kind == SiteKind::kAttnUpdate) ||
         (kind_ == RepairKind::kNorm && kind == SiteKind::kNormOutput);
}

at::Tensor CleanRecorder::At(const Site& site, const at::Tensor& x, const at::Tensor&) {
  if (layers_.Contains(site.layer) && Wants(site.kind)) {
    cache_[std::make_tuple(static_cast<int>(site.kind), site.layer, site.index)] = x;
  }
  return x;
}

const at::Tensor& CleanRecorder::Get(const Site& site) const {
  auto it = cache_.find(std::make_tuple(static_cast<int>(site.kind), site.layer, site.index));
  PC_ASSERT(it != cache_.end(), "repair: no clean tensor recorded for ", SiteKindName(site.kind), " of layer ",
            site.layer);
  return it->second;
}

// ---- perturbation hooks -----------------------------------------------------------------------

namespace {
uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
}  // namespace

PerturbHooks::PerturbHooks(LayerRange layers, PerturbKind kind, double delta, uint64_t seed)
    : layers_(layers), kind_(kind), delta_(delta), seed_(seed) {
  PC_CHECK(delta >= 0 && std::isfinite(delta), "perturbation: delta must be >= 0, got ", delta);
}

void PerturbHooks::SetRepair(RepairKind kind, LayerRange layers, const CleanRecorder* clean) {
  PC_ASSERT(kind == RepairKind::kNone || clean != nullptr, "repair without a clean recorder");
  repair_ = kind;
  repair_layers_ = layers;
  clean_ = clean;
}

bool PerturbHooks::Wants(SiteKind kind) const {
  return kind == SiteKind::kBlockOutput || (repair_ == RepairKind::kAttention && kind == SiteKind::kAttnUpdate) ||
         (repair_ == RepairKind::kNorm && kind == SiteKind::kNormOutput);
}

at::Tensor PerturbHooks::At(const Site& site, const at::Tensor& x, const at::Tensor&) {
  if (site.kind != SiteKind::kBlockOutput) {
    if (repair_ != RepairKind::kNone && repair_layers_.Contains(site.layer)) {
      const at::Tensor& clean = clean_->Get(site);
      PC_ASSERT(clean.sizes() == x.sizes(), "repair: the clean tensor has another shape (another batch?)");
      return clean;
    }
    return x;
  }
  if (!layers_.Contains(site.layer)) return x;
  const int64_t d = x.size(-1);
  at::Generator gen = at::detail::createCPUGenerator(SplitMix(SplitMix(seed_) ^ SplitMix(key_ * 1000003 + site.layer)));
  at::Tensor flat = x.reshape({-1, d});
  PerturbedStates p = PerturbStates(flat, kind_, delta_, gen);
  if (key_ >= kPairKeyBase) return p.h.view(x.sizes());  // statistics over the text windows only
  // The realised displacement, on the tensors the model actually sees.
  at::Tensor moved = p.skipped.logical_not();
  const int64_t n_moved = moved.sum().item<int64_t>();
  const int64_t n_reversing = p.reversing.sum().item<int64_t>();
  stats_.tokens += n_moved;
  stats_.skipped += flat.size(0) - n_moved;
  stats_.skipped_reversing += n_reversing;
  auto& per_layer = stats_.skipped_by_layer[site.layer];
  per_layer.first += flat.size(0) - n_moved;
  per_layer.second += n_reversing;
  if (n_moved > 0) {
    at::Tensor idx = moved.nonzero().squeeze(-1);
    at::Tensor a = flat.index_select(0, idx).to(at::kDouble), b = p.h.index_select(0, idx).to(at::kDouble);
    at::Tensor disp = (b - a).norm(2, {-1});
    if (delta_ > 0) {
      stats_.max_rel_error = std::max(stats_.max_rel_error, ((disp - delta_).abs() / delta_).max().item<double>());
    }
    if (kind_ == PerturbKind::kDirection) {
      at::Tensor na = a.norm(2, {-1}), nb = b.norm(2, {-1});
      stats_.max_norm_rel_change = std::max(stats_.max_norm_rel_change, ((nb - na).abs() / na).max().item<double>());
    }
  }
  return p.h.view(x.sizes());
}

// ---- the experiment ---------------------------------------------------------------------------

void PerturbOptions::Validate(const Model& model) const {
  const int L = model.num_layers();
  PC_CHECK(layers.count() > 0 && layers.first >= 0 && layers.last < L, "--layers ", layers.ToString(),
           ": out of range; the model has ", L, " layers (0-", L - 1, ")");
  PC_CHECK(repair_layers.count() == 0 || (repair_layers.first >= 0 && repair_layers.last < L), "--repair-layers ",
           repair_layers.ToString(), ": out of range; the model has ", L, " layers (0-", L - 1, ")");
  PC_CHECK(!deltas.empty(), "--delta: give at least one distance");
  for (double d : deltas) PC_CHECK(d > 0 && std::isfinite(d), "--delta: every distance must be > 0, got ", d);
  PC_CHECK(seeds >= 1, "--seeds must be at least 1, got ", seeds);
  PC_CHECK(!kinds.empty(), "--kinds: give magnitude, direction or both");
  for (RepairKind r : repairs) {
    PC_CHECK(r != RepairKind::kNorm || model.config().pre_norm, "--repair norm: this model is post-norm ",
             "(do_layer_norm_before is false), its norm outputs are the residual stream itself; use --repair attention");
  }
}

namespace {

// Observes ‖h‖ of every block output (clean baseline).
class NormObserver : public ForwardHooks {
 public:
  explicit NormObserver(int layers) : norms_(layers) {}
  bool Wants(SiteKind kind) const override { return kind == SiteKind::kBlockOutput; }
  at::Tensor At(const Site& site, const at::Tensor& x, const at::Tensor&) override {
    at::Tensor n = x.reshape({-1, x.size(-1)}).to(at::kDouble).norm(2, {-1}).to(at::kFloat).contiguous();
    norms_[site.layer].insert(norms_[site.layer].end(), n.data_ptr<float>(), n.data_ptr<float>() + n.numel());
    return x;
  }
  std::vector<std::vector<float>> norms_;
};

double Recovered(double damage, double repaired) { return damage > 0 ? (damage - repaired) / damage : kNaN; }

std::vector<double> Finite(const std::vector<double>& xs) {
  std::vector<double> out;
  for (double x : xs) {
    if (std::isfinite(x)) out.push_back(x);
  }
  return out;
}

}  // namespace

PerturbResult RunPerturb(Model& model, const ProbeInputs& in, const PerturbOptions& options) {
  options.Validate(model);
  PerturbResult r;
  r.layers = options.layers;
  r.repair_layers = options.repair_layers.count() > 0 ? options.repair_layers : options.layers;
  {
    NormObserver observer(model.num_layers());
    ProbeInputs text_only = in;
    text_only.pairs.clear();
    if (text_only.windows.defined() && text_only.windows.size(0) > 0) {
      Score(model, text_only, HookedForward(model, &observer));
      for (int l = 0; l < model.num_layers(); ++l) r.norms.push_back(LayerNorms{l, Summarize(observer.norms_[l])});
    }
  }
  r.baseline = Score(model, in, HookedForward(model, nullptr));
  std::vector<RepairKind> variants = {RepairKind::kNone};
  variants.insert(variants.end(), options.repairs.begin(), options.repairs.end());
  Progress progress("probe perturb",
                    static_cast<int64_t>(options.deltas.size() * options.seeds * options.kinds.size() * variants.size()),
                    "runs");
  for (double delta : options.deltas) {
    for (int s = 0; s < options.seeds; ++s) {
      const uint64_t seed = options.seed + static_cast<uint64_t>(s);
      for (PerturbKind kind : options.kinds) {
        for (RepairKind repair : variants) {
          PerturbHooks hooks(options.layers, kind, delta, seed);
          CleanRecorder clean(repair, r.repair_layers);
          hooks.SetRepair(repair, r.repair_layers, repair == RepairKind::kNone ? nullptr : &clean);
          ProbeForward forward = [&](const at::Tensor& tokens, uint64_t key) {
            if (repair != RepairKind::kNone) {
              clean.Clear();
              model.Forward(tokens, &clean);
            }
            hooks.SetBatch(key);
            return model.Forward(tokens, &hooks);
          };
          PerturbRun run;
          run.delta = delta;
          run.kind = kind;
          run.seed = seed;
          run.repair = repair;
          run.score = Score(model, in, forward);
          run.displacement = hooks.displacement();
          run.damage = run.score.loss - r.baseline.loss;
          run.accuracy_drop = r.baseline.accuracy() - run.score.accuracy();
          r.runs.push_back(std::move(run));
          progress.Add(1, Str("delta ", delta, " ", PerturbKindName(kind), " repair ", RepairKindName(repair)));
        }
      }
    }
  }
  progress.Finish();

  // Summaries over seeds.
  auto select = [&](double delta, PerturbKind kind, RepairKind repair) {
    std::vector<const PerturbRun*> out;
    for (const auto& run : r.runs) {
      if (run.delta == delta && run.kind == kind && run.repair == repair) out.push_back(&run);
    }
    return out;
  };
  for (double delta : options.deltas) {
    double mag = kNaN, dir = kNaN;
    for (PerturbKind kind : options.kinds) {
      PerturbSummary ps;
      ps.delta = delta;
      ps.kind = kind;
      std::vector<double> damage, drop;
      auto plain = select(delta, kind, RepairKind::kNone);
      for (const PerturbRun* run : plain) {
        damage.push_back(run->damage);
        drop.push_back(run->accuracy_drop);
      }
      ps.damage = MeanAndStd(damage);
      ps.accuracy_drop = MeanAndStd(drop);
      ps.tokens = plain.front()->displacement.tokens;
      ps.skipped = plain.front()->displacement.skipped;
      ps.skipped_reversing = plain.front()->displacement.skipped_reversing;
      (kind == PerturbKind::kMagnitude ? mag : dir) = ps.damage.mean;
      r.summary.push_back(ps);
      for (RepairKind repair : options.repairs) {
        RepairSummary rs;
        rs.delta = delta;
        rs.kind = kind;
        rs.repair = repair;
        auto repaired = select(delta, kind, repair);
        std::vector<double> rep_damage, recovered, acc_recovered;
        for (size_t i = 0; i < repaired.size(); ++i) {
          rep_damage.push_back(repaired[i]->damage);
          recovered.push_back(Recovered(plain[i]->damage, repaired[i]->damage));
          acc_recovered.push_back(Recovered(plain[i]->accuracy_drop, repaired[i]->accuracy_drop));
        }
        rs.damage_unrepaired = ps.damage;
        rs.damage_repaired = MeanAndStd(rep_damage);
        rs.recovered = MeanAndStd(Finite(recovered));
        rs.accuracy_recovered = MeanAndStd(Finite(acc_recovered));
        r.repair.push_back(rs);
      }
    }
    r.loss_ratio.push_back(dir / mag);
  }
  return r;
}

}  // namespace pc::probes
