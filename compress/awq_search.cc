#include "compress/awq_search.h"

#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/progress.h"
#include "core/strings.h"

namespace pc::awq {

at::Tensor QuantizeWeight(const at::Tensor& w, const QuantSpec& spec, bool f16_scales) {
  if (!f16_scales) return FakeQuantize(w, spec);
  QuantParams p = ComputeQuantParams(w, spec);
  p.scale = p.scale.to(at::kHalf).to(at::kFloat);
  PC_CHECK(at::isfinite(p.scale).all().item<bool>(), "awq: a group scale overflows float16 (scale_dtype: f16); ",
           "largest group range ", p.scale.max().item<double>(), " — use scale_dtype: f32");
  return FakeQuantizeWith(w, p, spec);
}

namespace {
// Calls fn(view (rows, count, len), first group, count) on the full groups and on the tail.
template <typename Fn>
void ForGroupViews(const at::Tensor& w, const QuantSpec& spec, Fn fn) {
  const int64_t rows = w.size(0), in = w.size(1), g = spec.GroupLength(in);
  const int64_t full = in / g, rem = in - full * g;
  if (full > 0) fn(w.narrow(1, 0, full * g).reshape({rows, full, g}), int64_t{0}, full);
  if (rem > 0) fn(w.narrow(1, full * g, rem).reshape({rows, 1, rem}), full, int64_t{1});
}

// Group index of every input column (in,) int64.
at::Tensor ColumnGroups(int64_t in, const QuantSpec& spec) {
  return at::arange(in, at::kLong).div(spec.GroupLength(in), "floor");
}
}  // namespace

at::Tensor DuoWeightMean(const std::vector<at::Tensor>& weights, const QuantSpec& spec) {
  std::vector<at::Tensor> parts;
  for (const auto& w : weights) parts.push_back(w.to(at::kFloat).abs());
  at::Tensor a = at::cat(parts, 0);  // (R, in)
  at::Tensor rel = at::empty_like(a);
  const int64_t rows = a.size(0);
  ForGroupViews(a, spec, [&](const at::Tensor& grp, int64_t first, int64_t count) {
    const int64_t len = grp.size(2);
    at::Tensor r = grp / (grp.amax(-1, /*keepdim=*/true) + 1e-6);  // (R, count, len)
    rel.narrow(1, first * spec.GroupLength(a.size(1)), count * len).copy_(r.reshape({rows, count * len}));
  });
  return rel.mean(0);  // (in,)
}

at::Tensor AwqScales(const at::Tensor& x_mean, const at::Tensor& w_mean, double alpha) {
  at::Tensor s = w_mean.defined() ? (x_mean.pow(alpha) / (w_mean.pow(1.0 - alpha) + 1e-4)).clamp_min(1e-4)
                                  : x_mean.pow(alpha).clamp_min(1e-4);
  s = s / (s.max() * s.min()).sqrt();
  return s.masked_fill(at::isfinite(s).logical_not(), 1.0);  // AutoAWQ: inf/nan -> 1
}

at::Tensor InverseNorms(const at::Tensor& y) {
  at::Tensor n = y.to(at::kFloat).pow(2).sum(-1).sqrt();  // (n,)
  return at::where(n > 0, 1.0 / n, at::zeros_like(n));
}

DirSums SplitSums(const at::Tensor& e_in, const at::Tensor& y_in, const at::Tensor& inv) {
  at::Tensor e = e_in.to(at::kFloat), y = y_in.to(at::kFloat);
  at::Tensor iso = (e * e).sum(-1);                   // (n,)
  at::Tensor p = (e * y).sum(-1) * inv;               // (n,) e·u
  at::Tensor e_perp = at::addcmul(e, (p * inv).unsqueeze(-1), y, -1.0);  // e − p·u
  DirSums s;
  s.iso = iso.sum(at::kDouble).item<double>();
  s.par = (p * p).sum(at::kDouble).item<double>();
  s.perp = (e_perp * e_perp).sum(at::kDouble).item<double>();
  s.elements = e.numel();
  return s;
}

double Objective(const DirSums& s, double lambda_par, double lambda_perp) {
  const double n = static_cast<double>(std::max<int64_t>(1, s.elements));
  if (lambda_par == lambda_perp) return lambda_par * s.iso / n;
  return (lambda_par * s.par + lambda_perp * s.perp) / n;
}

std::vector<std::pair<double, bool>> GridPoints(const SearchOptions& o) {
  std::vector<std::pair<double, bool>> g;
  if (o.fixed_alpha >= 0) {
    g.emplace_back(o.fixed_alpha, o.duo);
  } else if (o.grid == SearchOptions::Grid::kLlmAwq) {
    for (int i = 0; i < o.n_grid; ++i) g.emplace_back(static_cast<double>(i) / o.n_grid, o.duo);
  } else if (o.duo) {
    PC_CHECK(o.n_grid >= 3, "awq: grid 'llm-compressor' with duo scaling needs n_grid >= 3, got ", o.n_grid);
    g.emplace_back(0.0, false);  // s = 1
    for (int i = 0; i <= o.n_grid - 2; ++i) g.emplace_back(static_cast<double>(i) / (o.n_grid - 2), true);
  } else {
    PC_CHECK(o.n_grid >= 2, "awq: grid 'llm-compressor' needs n_grid >= 2, got ", o.n_grid);
    for (int i = 0; i < o.n_grid; ++i) g.emplace_back(static_cast<double>(i) / (o.n_grid - 1), false);
  }
  return g;
}

SearchResult SearchScales(const std::vector<Linear*>& members, const at::Tensor& x_mean, const SearchOptions& o,
                          const EvaluateFn& evaluate, const std::string& what) {
  std::vector<at::Tensor> w0;
  for (Linear* m : members) w0.push_back(m->weight);
  SearchResult r;
  at::Tensor w_mean;
  if (o.duo) {
    w_mean = DuoWeightMean(w0, o.spec);
    r.w_mean_min = w_mean.min().item<double>();
  }
  const std::vector<std::pair<double, bool>> grid = GridPoints(o);
  double best = std::numeric_limits<double>::infinity();
  SubProgress progress("awq grid " + what, static_cast<int64_t>(grid.size()));
  for (size_t i = 0; i < grid.size(); ++i) {
    at::Tensor s = AwqScales(x_mean, grid[i].second ? w_mean : at::Tensor(), grid[i].first);  // (in,) float32
    for (size_t k = 0; k < members.size(); ++k) {
      at::Tensor sv = s.to(w0[k].scalar_type()).unsqueeze(0);  // (1, in)
      members[k]->weight = QuantizeWeight(w0[k] * sv, o.spec, o.f16_scales) / sv;
    }
    DirSums d = evaluate();
    for (size_t k = 0; k < members.size(); ++k) members[k]->weight = w0[k];
    const double n = static_cast<double>(std::max<int64_t>(1, d.elements));
    const double obj = Objective(d, o.lambda_par, o.lambda_perp);
    r.alpha.push_back(grid[i].first);
    r.duo.push_back(grid[i].second ? 1.0 : 0.0);
    r.objective.push_back(obj);
    r.iso.push_back(d.iso / n);
    r.par.push_back(d.par / n);
    r.perp.push_back(d.perp / n);
    progress.Add();
    if (obj < best) {
      best = obj;
      r.best = static_cast<int>(i);
      r.scales = s;
    }
  }
  if (r.best < 0) {
    std::vector<std::string> v;
    for (double x : r.objective) v.push_back(FormatDouble(x));
    PC_THROW("awq: ", what, ": the loss is not finite for any α (", Join(v, ", "),
             "); the calibration activations or weights hold non-finite values");
  }
  return r;
}

ClipResult SearchClip(const at::Tensor& w_in, const at::Tensor& x_in, const QuantSpec& spec, bool f16_scales,
                      int steps, const std::string& what) {
  at::Tensor w = w_in.to(at::kFloat), x = x_in.to(at::kFloat);
  const int64_t rows = w.size(0), in = w.size(1), n = x.size(0);
  const int64_t g = spec.GroupLength(in), groups = spec.Groups(in), full = in / g, rem = in - full * g;
  PC_ASSERT(x.size(1) == in, "clip inputs ", x.size(1), " for ", in, " weight columns");
  at::Tensor col_group = ColumnGroups(in, spec);
  at::Tensor org_max = at::empty({rows, groups}, at::kFloat);  // max |w| per (row, group)
  ForGroupViews(w.abs(), spec, [&](const at::Tensor& grp, int64_t first, int64_t count) {
    org_max.narrow(1, first, count).copy_(grp.amax(-1));
  });
  // Inputs by group: (full, g, n) and the tail (rem, n).
  at::Tensor xf = full > 0 ? x.narrow(1, 0, full * g).reshape({n, full, g}).permute({1, 2, 0}).contiguous() : at::Tensor();
  at::Tensor xt = rem > 0 ? x.narrow(1, full * g, rem).t().contiguous() : at::Tensor();
  // Partial dot products of every (row, group) with every token: (groups, rc, n).
  auto dots = [&](const at::Tensor& wc) {
    std::vector<at::Tensor> parts;
    const int64_t rc = wc.size(0);
    if (full > 0) parts.push_back(at::bmm(wc.narrow(1, 0, full * g).reshape({rc, full, g}).permute({1, 0, 2}), xf));
    if (rem > 0) parts.push_back(at::mm(wc.narrow(1, full * g, rem), xt).unsqueeze(0));
    return parts.size() == 1 ? parts[0] : at::cat(parts, 0);
  };
  ClipResult out;
  out.max_val = org_max.clone();
  out.step = at::zeros({rows, groups}, at::kLong);
  // Rows in chunks: about 8M floats per (groups, rows, tokens) product.
  const int64_t chunk = std::max<int64_t>(1, std::min<int64_t>(rows, (8LL << 20) / std::max<int64_t>(1, groups * n)));
  SubProgress progress(what, (rows + chunk - 1) / chunk * steps);  // one tick per (row chunk, step)
  for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
    const int64_t rc = std::min(chunk, rows - r0);
    at::Tensor wc = w.narrow(0, r0, rc), om = org_max.narrow(0, r0, rc);
    at::Tensor org_out = dots(wc);
    at::Tensor best_err = at::full({rc, groups}, std::numeric_limits<float>::infinity(), at::kFloat);
    at::Tensor best_max = om.clone(), best_step = at::zeros({rc, groups}, at::kLong);
    for (int i = 0; i < steps; ++i) {
      at::Tensor mv = om * (1.0 - static_cast<double>(i) / 20.0);  // (rc, groups)
      at::Tensor mvc = mv.index_select(1, col_group);               // (rc, in)
      at::Tensor q = QuantizeWeight(at::min(at::max(wc, -mvc), mvc), spec, f16_scales);
      at::Tensor err = (dots(q) - org_out).pow(2).mean(-1).t();     // (rc, groups)
      at::Tensor better = err < best_err;
      best_err = at::where(better, err, best_err);
      best_max = at::where(better, mv, best_max);
      best_step.masked_fill_(better, i);
      progress.Add();
    }
    out.max_val.narrow(0, r0, rc).copy_(best_max);
    out.step.narrow(0, r0, rc).copy_(best_step);
  }
  return out;
}

at::Tensor ApplyClip(const at::Tensor& w, const at::Tensor& max_val, const QuantSpec& spec) {
  at::Tensor mvc = max_val.index_select(1, ColumnGroups(w.size(1), spec));  // (rows, in)
  at::Tensor wf = w.to(at::kFloat);
  return at::min(at::max(wf, -mvc), mvc).to(w.scalar_type());
}

}  // namespace pc::awq
