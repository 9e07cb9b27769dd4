#include "probes/scale.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/directional.h"
#include "core/error.h"
#include "core/progress.h"

namespace pc::probes {

const char* SpaceName(Space space) { return space == Space::kResidual ? "residual" : "value"; }

Space ParseSpace(const std::string& text, const std::string& what) {
  if (text == "residual") return Space::kResidual;
  if (text == "value") return Space::kValue;
  PC_THROW(what, ": unknown space '", text, "' (expected residual or value)");
}

namespace {
// The own value vectors (B, H, T, hd) and self weights (B, H, T) of the queries.
at::Tensor OwnValues(const at::Tensor& probs, const at::Tensor& v, int64_t T) {
  return v.narrow(2, probs.size(3) - T, T);
}
at::Tensor SelfWeights(const at::Tensor& probs) {
  return probs.diagonal(probs.size(3) - probs.size(2), 2, 3);
}
}  // namespace

at::Tensor ScaleValueSpace(const at::Tensor& probs, const at::Tensor& v, const at::Tensor& ctx, double alpha,
                           double beta) {
  return ScaleParallelPerp(ctx, OwnValues(probs, v, ctx.size(2)).to(ctx.scalar_type()), alpha, beta);
}

at::Tensor ExcludeSelf(const at::Tensor& probs, const at::Tensor& v, const at::Tensor& ctx, double factor) {
  at::Tensor self = SelfWeights(probs).unsqueeze(-1).to(ctx.scalar_type()) * OwnValues(probs, v, ctx.size(2));
  return self + (ctx - self) * factor;  // (B, H, T, hd)
}

ScaleHooks::ScaleHooks(LayerRange layers, ScaleSetting setting, bool attn, bool mlp)
    : layers_(layers), setting_(setting), attn_(attn), mlp_(mlp) {}

bool ScaleHooks::Wants(SiteKind kind) const {
  if (setting_.mode != ScaleSetting::Mode::kParallelPerp || setting_.space != Space::kResidual) return false;
  return (kind == SiteKind::kAttnUpdate && attn_) || (kind == SiteKind::kMlpUpdate && mlp_);
}

at::Tensor ScaleHooks::At(const Site& site, const at::Tensor& x, const at::Tensor& incoming) {
  if (!layers_.Contains(site.layer) || !Wants(site.kind)) return x;
  ++replaced_;
  return ScaleParallelPerp(x, incoming, setting_.alpha, setting_.beta);
}

bool ScaleHooks::WantsAttention(int layer) const {
  const bool value = setting_.mode == ScaleSetting::Mode::kExcludeSelf || setting_.space == Space::kValue;
  return value && layers_.Contains(layer);
}

at::Tensor ScaleHooks::AttentionContext(int layer, const at::Tensor& probs, const at::Tensor& v,
                                        const at::Tensor& ctx) {
  if (!WantsAttention(layer)) return ctx;
  ++replaced_;
  if (setting_.mode == ScaleSetting::Mode::kExcludeSelf) return ExcludeSelf(probs, v, ctx, setting_.factor);
  return ScaleValueSpace(probs, v, ctx, setting_.alpha, setting_.beta);
}

void ScaleOptions::Validate(int num_layers) const {
  PC_CHECK(layers.count() > 0 && layers.first >= 0 && layers.last < num_layers, "--layers ", layers.ToString(),
           ": out of range; the model has ", num_layers, " layers (0-", num_layers - 1, ")");
  PC_CHECK(!alphas.empty() || !betas.empty() || !factors.empty(),
           "probe scale: nothing to scale (give --alpha, --beta or --exclude-self)");
  PC_CHECK(space == Space::kValue || attn || mlp, "--sublayers: choose attn, mlp or both");
  for (const auto* list : {&alphas, &betas, &factors}) {
    for (double x : *list) PC_CHECK(std::isfinite(x), "probe scale: factor ", x, " is not finite");
  }
}

namespace {
std::vector<double> WithOne(std::vector<double> xs) {
  xs.push_back(1.0);
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  return xs;
}
}  // namespace

ScaleResult RunScale(Model& model, const ProbeInputs& in, const ScaleOptions& options) {
  options.Validate(model.num_layers());
  ScaleResult r;
  if (options.grid) {
    r.grid_alphas = WithOne(options.alphas);
    r.grid_betas = WithOne(options.betas);
  }
  std::set<std::pair<double, double>> needed;  // (α, β) cells to evaluate
  for (double a : r.grid_alphas) {
    for (double b : r.grid_betas) needed.insert({a, b});
  }
  for (double a : options.alphas) needed.insert({a, 1.0});
  for (double b : options.betas) needed.insert({1.0, b});
  Progress progress("probe scale", 1 + static_cast<int64_t>(needed.size() + options.factors.size()), "settings");
  auto run = [&](const ScaleSetting& s) {
    ScaleHooks hooks(options.layers, s, options.attn, options.mlp);
    ProbeScore score = Score(model, in, HookedForward(model, &hooks));
    PC_ASSERT(hooks.replaced() > 0, "scale hooks replaced nothing");
    progress.Add(1);
    return score;
  };
  std::map<std::pair<double, double>, ProbeScore> cells;  // (α, β) -> score
  auto cell = [&](double a, double b) -> const ProbeScore& {
    auto it = cells.find({a, b});
    if (it == cells.end()) {
      ScaleSetting s;
      s.space = options.space;
      s.alpha = a;
      s.beta = b;
      it = cells.emplace(std::make_pair(a, b), run(s)).first;
    }
    return it->second;
  };
  r.baseline = Score(model, in, HookedForward(model, nullptr));
  progress.Add(1);
  r.rows.push_back(ScaleRow{"baseline", ScaleSetting{}, r.baseline});
  for (double a : r.grid_alphas) {
    for (double b : r.grid_betas) r.grid.push_back(cell(a, b));
  }
  for (double a : options.alphas) {
    ScaleSetting s;
    s.space = options.space;
    s.alpha = a;
    r.rows.push_back(ScaleRow{"parallel", s, cell(a, 1.0)});
  }
  for (double b : options.betas) {
    ScaleSetting s;
    s.space = options.space;
    s.beta = b;
    r.rows.push_back(ScaleRow{"perpendicular", s, cell(1.0, b)});
  }
  for (double f : options.factors) {
    ScaleSetting s;
    s.mode = ScaleSetting::Mode::kExcludeSelf;
    s.space = Space::kValue;
    s.factor = f;
    r.rows.push_back(ScaleRow{"exclude_self", s, run(s)});
  }
  progress.Finish();
  return r;
}

}  // namespace pc::probes
