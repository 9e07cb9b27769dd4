#include "probes/decompose.h"

#include "core/error.h"
#include "core/progress.h"
#include "metrics/perplexity.h"
#include "probes/stats.h"

namespace pc::probes {

namespace {
void Append(std::vector<float>& out, const at::Tensor& values) {  // values: (n,) float64
  at::Tensor f = values.to(at::kFloat).contiguous();
  const float* p = f.data_ptr<float>();
  out.insert(out.end(), p, p + f.numel());
}
}  // namespace

void DirectionalAccum::Add(const at::Tensor& x, const at::Tensor& r) {
  PC_ASSERT(x.sizes() == r.sizes() && x.dim() == 2, "directional accumulation: shapes differ");
  at::Tensor rr = (r * r).sum(-1);                    // (N,) ‖r‖²
  at::Tensor xx = (x * x).sum(-1);                    // (N,) ‖x‖²
  at::Tensor xr = (x * r).sum(-1);                    // (N,) x·r
  at::Tensor valid = (rr > 0).logical_and(xx > 0);    // (N,)
  const int64_t n_valid = valid.sum().item<int64_t>();
  tokens += n_valid;
  skipped += x.size(0) - n_valid;
  if (n_valid == 0) return;
  at::Tensor idx = valid.nonzero().squeeze(-1);                           // (n,)
  at::Tensor xv = x.index_select(0, idx), rv = r.index_select(0, idx);    // (n, d)
  at::Tensor rrv = rr.index_select(0, idx), xxv = xx.index_select(0, idx), xrv = xr.index_select(0, idx);
  at::Tensor c = xrv / rrv;                                 // (n,)
  at::Tensor perp = xv - c.unsqueeze(-1) * rv;              // (n, d)
  sum_sq += xxv.sum().item<double>();
  sum_par += (xrv * xrv / rrv).sum().item<double>();
  sum_perp += (perp * perp).sum().item<double>();
  sum_rel_norm += (xxv / rrv).sqrt().sum().item<double>();
  Append(coef, c);
  Append(cos, xrv / (xxv * rrv).sqrt());
}

double DirectionalAccum::parallel_share() const { return sum_sq > 0 ? sum_par / sum_sq : kNaN; }
double DirectionalAccum::perpendicular_share() const { return sum_sq > 0 ? sum_perp / sum_sq : kNaN; }
double DirectionalAccum::mean_rel_norm() const {
  return tokens > 0 ? sum_rel_norm / static_cast<double>(tokens) : kNaN;
}

DecomposeHooks::DecomposeHooks(const Model& model, const DecomposeOptions& options)
    : options_(options), heads_(static_cast<int>(model.config().heads)) {
  PC_ASSERT(options.layers.count() > 0 && options.layers.last < model.num_layers(), "decompose: bad layer range");
  result_.layers = options.layers;
  for (int l = options.layers.first; l <= options.layers.last; ++l) {
    result_.updates.push_back(UpdateDecomposition{l, "attn", {}});
    result_.updates.push_back(UpdateDecomposition{l, "mlp", {}});
    if (options.value_space) {
      for (int h = 0; h < heads_; ++h) result_.heads.push_back(HeadDecomposition{l, h, {}, {}});
    }
  }
}

bool DecomposeHooks::Wants(SiteKind kind) const {
  return kind == SiteKind::kAttnUpdate || kind == SiteKind::kMlpUpdate;
}

at::Tensor DecomposeHooks::At(const Site& site, const at::Tensor& x, const at::Tensor& incoming) {
  if (!options_.layers.Contains(site.layer)) return x;
  const int64_t d = x.size(-1);
  const int index = 2 * (site.layer - options_.layers.first) + (site.kind == SiteKind::kMlpUpdate ? 1 : 0);
  result_.updates[index].split.Add(x.reshape({-1, d}).to(at::kDouble), incoming.reshape({-1, d}).to(at::kDouble));
  if (site.kind == SiteKind::kAttnUpdate) result_.tokens += x.numel() / d;
  return x;
}

bool DecomposeHooks::WantsAttention(int layer) const { return options_.value_space && options_.layers.Contains(layer); }

at::Tensor DecomposeHooks::AttentionContext(int layer, const at::Tensor& probs, const at::Tensor& v,
                                            const at::Tensor& ctx) {
  // probs (B, H, T, S), v (B, H, S, hd), ctx (B, H, T, hd). Query t sits at key position S − T + t.
  const int64_t B = ctx.size(0), H = ctx.size(1), T = ctx.size(2), S = probs.size(3), hd = ctx.size(3);
  at::Tensor v_self = v.narrow(2, S - T, T).to(at::kDouble);                 // (B, H, T, hd)
  at::Tensor a_self = probs.diagonal(S - T, 2, 3).to(at::kDouble);           // (B, H, T)
  at::Tensor o = ctx.to(at::kDouble);                                        // (B, H, T, hd)
  const size_t base = static_cast<size_t>(layer - options_.layers.first) * heads_;
  for (int64_t h = 0; h < H; ++h) {
    HeadDecomposition& hd_out = result_.heads[base + h];
    hd_out.split.Add(o.select(1, h).reshape({B * T, hd}), v_self.select(1, h).reshape({B * T, hd}));
    Append(hd_out.self_weight, a_self.select(1, h).reshape({B * T}));
  }
  return ctx;
}

DecomposeResult DecomposeHooks::Take() { return std::move(result_); }

DecomposeResult Decompose(Model& model, const ProbeInputs& in, const DecomposeOptions& options) {
  PC_CHECK(in.windows.defined() && in.windows.dim() == 2 && in.windows.size(0) > 0,
           "probe decompose: no text windows to decompose");
  DecomposeHooks hooks(model, options);
  const int64_t W = in.windows.size(0), T = in.windows.size(1);
  const int64_t batch = in.batch > 0 ? in.batch : DefaultEvalBatch(model, T);
  at::NoGradGuard no_grad;
  Progress progress("decompose", W, "windows");
  for (int64_t start = 0; start < W; start += batch) {
    const int64_t n = std::min(batch, W - start);
    model.Forward(in.windows.narrow(0, start, n), &hooks);
    progress.Add(n);
  }
  return hooks.Take();
}

}  // namespace pc::probes
