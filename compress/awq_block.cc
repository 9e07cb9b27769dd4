#include "compress/awq_block.h"

#include <chrono>
#include <ctime>
#include <set>

#include "compress/awq_groups.h"
#include "core/error.h"
#include "core/log.h"
#include "core/strings.h"

namespace pc::awq {
namespace {

double Since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Processor time of the whole process (all threads), for the log and the records.
double CpuNow() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

// One pass of the original block: what the searches and the clipping need (see the header).
// Full-size captures are written into preallocated (tokens, features) tensors.
class CaptureHooks : public ForwardHooks {
 public:
  explicit CaptureHooks(int64_t tokens) : tokens_(tokens) {}
  std::set<int> abs_idx, full_idx, sample_idx;
  bool want_attn = false, want_mlp = false;
  int64_t stride = 1;        // clip sampling: tokens 0, stride, 2·stride, ... of the whole set
  int64_t token_offset = 0;  // first token of the current micro-batch
  std::map<int, at::Tensor> abs_sum;                 // (in,) float64 Σ|x|
  std::map<int, at::Tensor> full;                    // (tokens, in) compute dtype
  std::map<int, std::vector<at::Tensor>> sampled;    // parts of (samples, in) float32
  at::Tensor attn, mlp, mlp_in;                      // (tokens, d) original updates and MLP input

  bool Wants(SiteKind k) const override {
    return k == SiteKind::kLinearInput || (want_attn && k == SiteKind::kAttnUpdate) ||
           (want_mlp && k == SiteKind::kMlpUpdate);
  }

  at::Tensor At(const Site& site, const at::Tensor& x, const at::Tensor& incoming) override {
    if (site.kind == SiteKind::kAttnUpdate) {
      Store(attn, x);
    } else if (site.kind == SiteKind::kMlpUpdate) {
      Store(mlp, x);
      Store(mlp_in, incoming);
    } else if (site.kind == SiteKind::kLinearInput) {
      const int i = site.index;
      const bool a = abs_idx.count(i) > 0, f = full_idx.count(i) > 0, s = sample_idx.count(i) > 0;
      if (!(a || f || s)) return x;
      at::Tensor flat = x.reshape({-1, x.size(-1)});  // (n, in)
      if (a) {
        at::Tensor v = at::sum(flat.abs(), {0}, false, at::kDouble);
        auto it = abs_sum.find(i);
        if (it == abs_sum.end()) abs_sum.emplace(i, v); else it->second.add_(v);
      }
      if (f) Store(full[i], flat);
      if (s) {
        const int64_t first = (token_offset + stride - 1) / stride * stride - token_offset;
        if (first < flat.size(0)) {
          at::Tensor idx = at::arange(first, flat.size(0), stride, at::kLong);
          sampled[i].push_back(flat.index_select(0, idx).to(at::kFloat));
        }
      }
    }
    return x;
  }

 private:
  void Store(at::Tensor& dst, const at::Tensor& x) {
    at::Tensor flat = x.reshape({-1, x.size(-1)});
    if (!dst.defined()) dst = at::empty({tokens_, flat.size(1)}, flat.options());
    dst.narrow(0, token_offset, flat.size(0)).copy_(flat);
  }
  int64_t tokens_;
};

// Loss of a sublayer (attention or MLP update, norm included) against its original output.
EvaluateFn SublayerEval(Model& model, int layer, bool attention, const at::Tensor& input, const at::Tensor& y,
                        const at::Tensor& inv, int64_t mb) {
  return [&model, layer, attention, input, y, inv, mb]() {
    const int64_t N = input.size(0), L = input.size(1), d = y.size(1);
    ForwardContext ctx = model.MakeContext(L);
    DirSums total;
    for (int64_t s = 0; s < N; s += mb) {
      const int64_t n = std::min(mb, N - s);
      at::Tensor x = input.narrow(0, s, n);
      at::Tensor out = attention ? model.AttentionUpdate(layer, x, ctx) : model.MlpUpdate(layer, x, ctx);
      at::Tensor yr = y.narrow(0, s * L, n * L);
      total.Add(SplitSums(out.reshape({-1, d}) - yr, yr, inv.narrow(0, s * L, n * L)));
    }
    return total;
  };
}

// Loss of one linear on its captured inputs: e = x (Ŵ − W)ᵀ against y = x Wᵀ + b.
EvaluateFn LinearEval(Linear* m, const at::Tensor& w0, const at::Tensor& x, const at::Tensor& y,
                      const at::Tensor& inv, int64_t chunk) {
  return [m, w0, x, y, inv, chunk]() {
    at::Tensor dw = (m->weight.to(at::kFloat) - w0.to(at::kFloat)).t();  // (in, out)
    DirSums total;
    for (int64_t t = 0; t < x.size(0); t += chunk) {
      const int64_t n = std::min(chunk, x.size(0) - t);
      at::Tensor e = at::mm(x.narrow(0, t, n).to(at::kFloat), dw);
      total.Add(SplitSums(e, y.narrow(0, t, n), inv.narrow(0, t, n)));
    }
    return total;
  };
}

std::vector<double> ToVector(const at::Tensor& t) {
  at::Tensor c = t.to(at::kDouble).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

}  // namespace

ClipSummary SummarizeClip(const std::vector<at::Tensor>& steps, int n_steps) {
  ClipSummary s;
  if (steps.empty()) return s;
  std::vector<at::Tensor> flat;
  for (const auto& t : steps) flat.push_back(t.reshape({-1}));
  at::Tensor all = at::cat(flat).to(at::kDouble);
  s.mean_factor = (1.0 - all / 20.0).mean().item<double>();
  s.fraction_clipped = (all > 0).to(at::kDouble).mean().item<double>();
  at::Tensor counts = at::bincount(all.to(at::kLong), {}, n_steps).to(at::kDouble) / static_cast<double>(all.numel());
  s.histogram = ToVector(counts);
  return s;
}

void TransformAwqBlock(BlockScope& scope, const BlockOptions& o, const std::string& method,
                       std::map<std::string, LinearNote>* notes) {
  Model& model = scope.model;
  const int layer = scope.layer;
  Block& block = model.block(layer);
  const at::Tensor& h = scope.input;  // (N, L, d)
  const int64_t N = h.size(0), L = h.size(1), T = N * L, mb = std::max<int64_t>(1, scope.micro_batch);
  std::vector<ScaleGroup> groups = ResolveGroups(model, block, scope.members);

  // 1. Capture.
  auto t_capture = std::chrono::steady_clock::now();
  const double cpu_capture = CpuNow();
  CaptureHooks cap(T);
  for (const ScaleGroup& g : groups) {
    if (!g.active()) continue;
    cap.abs_idx.insert(g.members[0]);
    if (g.inspect == Inspect::kAttention) cap.want_attn = true;
    if (g.inspect == Inspect::kMlp) cap.want_mlp = true;
    if (g.inspect == Inspect::kMembers) {
      PC_ASSERT(g.members.size() == 1, "group ", g.name, " measured on its members has ", g.members.size());
      cap.full_idx.insert(g.members[0]);
    }
  }
  std::vector<int> clip_targets;
  if (o.clip) {
    for (int i : scope.members) {
      const Role r = block.linears[i].role;
      if (r == Role::kQ || r == Role::kK || (r == Role::kQKV && !o.clip_fused_v)) continue;
      clip_targets.push_back(i);
      cap.sample_idx.insert(i);
    }
  }
  cap.stride = std::max<int64_t>(1, T / o.clip_tokens);
  {
    ForwardContext ctx = model.MakeContext(L, 0, &cap);
    for (int64_t s = 0; s < N; s += mb) {
      cap.token_offset = s * L;
      model.BlockForward(layer, h.narrow(0, s, std::min(mb, N - s)), ctx);
    }
  }
  const double capture_s = Since(t_capture), capture_cpu = CpuNow() - cpu_capture;

  // 2. Search every group on the original block.
  std::vector<SearchResult> results(groups.size());
  std::vector<double> seconds(groups.size(), 0.0), cpu_seconds(groups.size(), 0.0);
  at::Tensor attn_inv = cap.attn.defined() ? InverseNorms(cap.attn) : at::Tensor();
  at::Tensor mlp_inv = cap.mlp.defined() ? InverseNorms(cap.mlp) : at::Tensor();
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const ScaleGroup& g = groups[gi];
    if (!g.active()) continue;
    auto t0 = std::chrono::steady_clock::now();
    const double c0 = CpuNow();
    std::vector<Linear*> members;
    for (int i : g.members) members.push_back(&block.linears[i]);
    at::Tensor x_mean = (cap.abs_sum.at(g.members[0]) / static_cast<double>(T)).to(at::kFloat);  // (in,)
    EvaluateFn eval;
    switch (g.inspect) {
      case Inspect::kAttention:
        eval = SublayerEval(model, layer, true, h, cap.attn, attn_inv, mb);
        break;
      case Inspect::kMlp:
        eval = SublayerEval(model, layer, false, cap.mlp_in.view({N, L, -1}), cap.mlp, mlp_inv, mb);
        break;
      case Inspect::kMembers: {
        Linear* m = members[0];
        const at::Tensor& x = cap.full.at(g.members[0]);
        at::Tensor y = at::empty({T, m->out_features()}, at::kFloat);
        // In the activations' dtype (the model's compute dtype; bf16 weights may be computed in f32).
        const at::Tensor w = m->weight.to(x.scalar_type());
        const at::Tensor bias = m->bias.defined() ? m->bias.to(x.scalar_type()) : m->bias;
        for (int64_t t = 0; t < T; t += mb * L) {
          const int64_t n = std::min(mb * L, T - t);
          y.narrow(0, t, n).copy_(at::linear(x.narrow(0, t, n), w, bias).to(at::kFloat));
        }
        eval = LinearEval(m, m->weight, x, y, InverseNorms(y), mb * L);
        break;
      }
    }
    results[gi] = SearchScales(members, x_mean, o.search, eval, "layer " + std::to_string(layer) + " " + g.name);
    seconds[gi] = Since(t0);
    cpu_seconds[gi] = CpuNow() - c0;
  }
  cap.full.clear();
  cap.attn = cap.mlp = cap.mlp_in = at::Tensor();

  // 3. Fold.
  std::map<int, at::Tensor> scale_of;  // linear index -> the s its input columns were multiplied by
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const ScaleGroup& g = groups[gi];
    if (!g.active()) continue;
    FoldScales(block, g, results[gi].scales);
    if (g.prev == PrevKind::kLinear) {  // its last len(s) output rows were divided by s
      const Linear& p = block.linears[g.prev_linear];
      const at::Tensor& s = results[gi].scales;
      LinearNote& note = (*notes)[p.name];
      if (!note.out_scale.defined()) note.out_scale = at::ones({p.out_features()}, at::kFloat);
      note.out_scale.narrow(0, p.out_features() - s.numel(), s.numel()).div_(s.to(at::kFloat));
    }
    for (int i : g.members) {
      scale_of[i] = results[gi].scales;
      LinearNote& note = (*notes)[block.linears[i].name];
      note.in_scale = results[gi].scales.to(at::kFloat);
      note.alpha = results[gi].alpha[results[gi].best];
      note.group = g.name;
    }
  }

  // 4. Clip on the scaled weights with the scaled inputs.
  auto t_clip = std::chrono::steady_clock::now();
  const double cpu_clip = CpuNow();
  const QuantSpec& spec = o.search.spec;
  for (int i : clip_targets) {
    Linear& lin = block.linears[i];
    auto parts = cap.sampled.find(i);
    PC_ASSERT(parts != cap.sampled.end(), "no sampled inputs for ", lin.name);
    at::Tensor x = at::cat(parts->second, 0);  // (samples, in)
    auto s = scale_of.find(i);
    if (s != scale_of.end()) x = x / s->second.unsqueeze(0);
    ClipResult c;
    if (lin.role == Role::kQKV) {  // clip_fused_v: only the v rows
      at::Tensor rows = FusedValueRows(model);
      at::Tensor w = lin.weight.index_select(0, rows);
      c = SearchClip(w, x, spec, o.search.f16_scales, o.clip_steps, "awq clip " + lin.name);
      at::Tensor full = lin.weight.clone();
      full.index_copy_(0, rows, ApplyClip(w, c.max_val, spec));
      lin.weight = full;
    } else {
      c = SearchClip(lin.weight, x, spec, o.search.f16_scales, o.clip_steps, "awq clip " + lin.name);
      lin.weight = ApplyClip(lin.weight, c.max_val, spec);
    }
    (*notes)[lin.name].clip_step = c.step;
  }
  const double clip_s = Since(t_clip), clip_cpu = CpuNow() - cpu_clip;
  std::string search_log;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    if (groups[gi].active()) search_log += Str(", ", groups[gi].kind, " ", FormatDouble(cpu_seconds[gi], 3));
  }
  log::Verbose("awq", "layer ", layer, " (wall s / cpu s): capture ", FormatDouble(capture_s, 3), " / ",
               FormatDouble(capture_cpu, 3), ", clip ", FormatDouble(clip_s, 3), " / ", FormatDouble(clip_cpu, 3),
               " for ", clip_targets.size(), " linears; search cpu s", search_log);

  // 5. One record per group.
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const ScaleGroup& g = groups[gi];
    Record rec;
    rec.kind = "awq_group";
    rec.name = g.name;
    rec.values["layer"] = layer;
    rec.text["method"] = method;
    rec.text["kind"] = g.kind;
    rec.text["prev"] = g.prev_name;
    rec.text["prev_kind"] = PrevKindName(g.prev);
    rec.text["inspect"] = InspectName(g.inspect);
    std::vector<std::string> names;
    for (int i : g.members) names.push_back(block.linears[i].name);
    rec.text["members"] = Join(names, ",");
    rec.text["status"] = g.active() ? "scaled" : "skipped";
    rec.text["skip_reason"] = g.skip_reason;
    if (g.active()) {
      const SearchResult& r = results[gi];
      rec.values["alpha"] = r.alpha[r.best];
      rec.values["best_index"] = r.best;
      rec.values["objective"] = r.objective[r.best];
      rec.values["iso"] = r.iso[r.best];
      rec.values["par"] = r.par[r.best];
      rec.values["perp"] = r.perp[r.best];
      if (r.alpha[0] == 0.0 && r.duo[0] == 0.0) {  // α = 0 in the plain form is RTN's scale (s = 1): the gain over it
        rec.values["objective_alpha0"] = r.objective[0];
        rec.values["iso_alpha0"] = r.iso[0];
      }
      rec.values["lambda_par"] = o.search.lambda_par;
      rec.values["lambda_perp"] = o.search.lambda_perp;
      rec.values["duo_scaling"] = o.search.duo ? 1 : 0;
      rec.values["tokens"] = static_cast<double>(T);
      rec.values["scale_min"] = r.scales.min().item<double>();
      rec.values["scale_max"] = r.scales.max().item<double>();
      rec.values["seconds"] = seconds[gi];
      rec.values["cpu_seconds"] = cpu_seconds[gi];
      rec.arrays["alpha"] = r.alpha;
      rec.arrays["duo"] = r.duo;
      rec.arrays["objective"] = r.objective;
      rec.arrays["iso"] = r.iso;
      rec.arrays["par"] = r.par;
      rec.arrays["perp"] = r.perp;
      std::vector<at::Tensor> steps;
      for (int i : g.members) {
        auto it = notes->find(block.linears[i].name);
        if (it != notes->end() && it->second.clip_step.defined()) steps.push_back(it->second.clip_step);
      }
      if (!steps.empty()) {
        ClipSummary cs = SummarizeClip(steps, o.clip_steps);
        rec.values["clip_mean"] = cs.mean_factor;
        rec.values["clip_fraction"] = cs.fraction_clipped;
        rec.arrays["clip_hist"] = cs.histogram;
      }
    }
    scope.records->push_back(std::move(rec));
  }
}

}  // namespace pc::awq
