#include "compress/engine.h"

#include <chrono>
#include <map>
#include <set>

#include "core/error.h"
#include "core/log.h"
#include "core/progress.h"

namespace pc {

bool Plan::AddsActivationScales() const {
  for (const auto& m : methods) {
    if (m->AddsActivationScales()) return true;
  }
  return false;
}

int Plan::Compressed() const {
  int n = 0;
  for (const auto& e : entries) n += e.method >= 0;
  return n;
}

int64_t DefaultMicroBatch(const Model& model, int64_t seq_len) {
  const ModelConfig& c = model.config();
  const int64_t widest = std::max({c.intermediate, c.heads * seq_len, 3 * c.hidden});
  const int64_t per_window = seq_len * widest * 4 * 3;  // a few live intermediates of the widest kind
  return std::max<int64_t>(1, (256LL << 20) / std::max<int64_t>(1, per_window));
}

at::Tensor RunBlockBatched(Model& model, int layer, const at::Tensor& x, int64_t micro_batch, ForwardHooks* hooks) {
  const int64_t N = x.size(0), L = x.size(1);
  at::Tensor out = at::empty_like(x);
  ForwardContext ctx = model.MakeContext(L, 0, hooks);
  for (int64_t s = 0; s < N; s += micro_batch) {
    const int64_t n = std::min(micro_batch, N - s);
    out.narrow(0, s, n).copy_(model.BlockForward(layer, x.narrow(0, s, n), ctx));
  }
  return out;
}

namespace {

// Collects input statistics (and method accumulators) for a set of linears of one block.
class StatsHooks : public ForwardHooks {
 public:
  struct Target {
    uint32_t kinds = 0;
    const Method* method = nullptr;  // for Accumulate when it wants outputs
    std::shared_ptr<InputStats> stats;
  };
  StatsHooks(const Block& block, std::map<int, Target> targets) : block_(block), targets_(std::move(targets)) {}

  bool Wants(SiteKind k) const override { return k == SiteKind::kLinearInput || k == SiteKind::kLinearOutput; }

  at::Tensor At(const Site& site, const at::Tensor& x, const at::Tensor&) override {
    auto it = targets_.find(site.index);
    if (it == targets_.end()) return x;
    Target& t = it->second;
    if (site.kind == SiteKind::kLinearInput) {
      at::Tensor flat = x.reshape({-1, x.size(-1)}).to(at::kFloat);  // (n, in)
      last_input_[site.index] = flat;
      // Linears fed by the same tensor (q, k, v; gate, up) share one accumulation.
      auto shared = by_input_.find(x.data_ptr());
      if (shared != by_input_.end() && shared->second.second == t.kinds) {
        t.stats = shared->second.first;
        return x;
      }
      by_input_[x.data_ptr()] = {t.stats, t.kinds};
      InputStats& s = *t.stats;
      s.tokens += flat.size(0);
      if (t.kinds & kStatAbsSum) Add(s.abs_sum, flat.abs().sum(0).to(at::kDouble));
      if (t.kinds & kStatSqSum) Add(s.sq_sum, (flat * flat).sum(0).to(at::kDouble));
      if (t.kinds & kStatGram) Add(s.gram, at::mm(flat.t(), flat).to(at::kDouble));
    } else if (t.method != nullptr) {
      at::Tensor y = x.reshape({-1, x.size(-1)}).to(at::kFloat);
      t.method->Accumulate(block_.linears[site.index], last_input_[site.index], y, *t.stats);
    }
    return x;
  }

  void NewBatch() { by_input_.clear(); }
  std::map<int, Target>& targets() { return targets_; }

 private:
  static void Add(at::Tensor& acc, const at::Tensor& v) {
    if (acc.defined()) acc.add_(v); else acc = v.clone();
  }
  const Block& block_;
  std::map<int, Target> targets_;
  std::map<const void*, std::pair<std::shared_ptr<InputStats>, uint32_t>> by_input_;
  std::map<int, at::Tensor> last_input_;
};

// Captures the inputs of chosen linears: (n, in) float32, concatenated over micro-batches.
class CaptureHooks : public ForwardHooks {
 public:
  explicit CaptureHooks(std::set<int> wanted) : wanted_(std::move(wanted)) {}
  bool Wants(SiteKind k) const override { return k == SiteKind::kLinearInput; }
  at::Tensor At(const Site& site, const at::Tensor& x, const at::Tensor&) override {
    if (wanted_.count(site.index)) parts_[site.index].push_back(x.reshape({-1, x.size(-1)}).to(at::kFloat));
    return x;
  }
  at::Tensor Get(int index) const {
    auto it = parts_.find(index);
    PC_ASSERT(it != parts_.end(), "no captured input for linear ", index);
    return at::cat(it->second, 0);
  }

 private:
  std::set<int> wanted_;
  std::map<int, std::vector<at::Tensor>> parts_;
};

double RelError(const at::Tensor& y_hat, const at::Tensor& y) {
  double den = y.to(at::kDouble).pow(2).sum().item<double>();
  double num = (y_hat.to(at::kDouble) - y.to(at::kDouble)).pow(2).sum().item<double>();
  return den > 0 ? num / den : (num > 0 ? INFINITY : 0.0);
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

}  // namespace

CompressResult RunCompression(Model& model, Plan& plan, const at::Tensor& calib, const EngineOptions& options) {
  PC_CHECK(calib.dim() == 2 && calib.size(0) > 0, "compress: no calibration windows");
  at::NoGradGuard no_grad;
  const auto t_start = std::chrono::steady_clock::now();
  const int64_t N = calib.size(0), L = calib.size(1);
  const int64_t mb = options.micro_batch > 0 ? options.micro_batch : DefaultMicroBatch(model, L);
  const int64_t log_n = std::min<int64_t>(N, std::max<int64_t>(1, options.log_windows));
  CompressResult result;
  const bool act_scales = plan.AddsActivationScales() && *model.arch().act_scales != '\0';

  ForwardContext ctx0 = model.MakeContext(L);
  at::Tensor x = at::empty({N, L, model.config().hidden}, at::TensorOptions().dtype(model.dtype()));
  for (int64_t s = 0; s < N; s += mb) {
    const int64_t n = std::min(mb, N - s);
    x.narrow(0, s, n).copy_(model.Embed(calib.narrow(0, s, n), ctx0));
  }
  if (options.release_embeddings) {
    model.embed() = at::Tensor();
    model.pos_embed() = at::Tensor();
  }

  std::map<int, std::vector<const PlanEntry*>> by_layer;
  for (const auto& e : plan.entries) by_layer[e.layer].push_back(&e);
  Progress progress("compress", model.num_layers(), "blocks");
  for (int layer = 0; layer < model.num_layers(); ++layer) {
    model.LoadBlock(layer);
    Block& block = model.block(layer);
    if (act_scales && !block.act_scales.defined()) {
      block.act_scales = at::ones({model.config().intermediate}, at::TensorOptions().dtype(model.dtype()));
    }
    std::vector<const PlanEntry*> todo;
    for (const PlanEntry* e : by_layer[layer]) {
      Record rec;
      rec.kind = "linear";
      rec.name = e->name;
      rec.values["layer"] = layer;
      rec.text["role"] = RoleName(e->role);
      rec.values["out_features"] = block.linears[e->index].out_features();
      rec.values["in_features"] = block.linears[e->index].in_features();
      if (e->method < 0) {
        rec.text["method"] = "";
        rec.text["skipped"] = e->skip_reason;
        result.records.push_back(rec);
      } else {
        todo.push_back(e);
      }
    }
    at::Tensor y_orig;
    if (!plan.propagate_compressed || todo.empty()) y_orig = RunBlockBatched(model, layer, x, mb);
    if (!todo.empty()) {
      // Original inputs and outputs of every planned linear on the logging windows.
      std::set<int> planned;
      for (const PlanEntry* e : todo) planned.insert(e->index);
      CaptureHooks pre(planned);
      RunBlockBatched(model, layer, x.narrow(0, 0, log_n), mb, &pre);
      std::map<int, at::Tensor> x_pre, w_orig, y_pre;
      for (int i : planned) {
        x_pre[i] = pre.Get(i);
        w_orig[i] = block.linears[i].weight.clone();
        y_pre[i] = at::linear(x_pre[i], block.linears[i].weight.to(at::kFloat),
                              block.linears[i].bias.defined() ? block.linears[i].bias.to(at::kFloat) : at::Tensor());
      }
      // Block transforms (AWQ).
      std::map<int, std::vector<int>> members;  // method -> linear indices
      for (const PlanEntry* e : todo) members[e->method].push_back(e->index);
      auto t_transform = std::chrono::steady_clock::now();
      for (auto& [m, idx] : members) {
        BlockScope scope{model, layer, x, idx, mb, &result.records};
        plan.methods[m]->TransformBlock(scope);
      }
      double transform_s = Seconds(t_transform);
      // Inputs after the transform, before any linear is compressed (same windows).
      CaptureHooks post(planned);
      RunBlockBatched(model, layer, x.narrow(0, 0, log_n), mb, &post);
      std::map<int, at::Tensor> w_mid;
      for (int i : planned) w_mid[i] = block.linears[i].weight.clone();
      // Stages: one, or four when a method is true-sequential.
      std::map<int, std::vector<const PlanEntry*>> stages;
      for (const PlanEntry* e : todo) {
        bool seq = plan.methods[e->method]->TrueSequential();
        stages[seq ? InputIndex(e->role) : 0].push_back(e);
      }
      for (auto& [stage, entries] : stages) {
        std::map<int, StatsHooks::Target> targets;
        bool any = false;
        for (const PlanEntry* e : entries) {
          const Method& m = *plan.methods[e->method];
          StatsHooks::Target t;
          t.kinds = m.stats();
          t.method = m.WantsOutputs() ? &m : nullptr;
          t.stats = std::make_shared<InputStats>();
          any = any || t.kinds != 0 || t.method != nullptr;
          targets[e->index] = t;
        }
        StatsHooks hooks(block, targets);
        if (any) {
          ForwardContext ctx = model.MakeContext(L, 0, &hooks);
          for (int64_t s = 0; s < N; s += mb) {
            hooks.NewBatch();
            model.BlockForward(layer, x.narrow(0, s, std::min(mb, N - s)), ctx);
          }
        }
        for (const PlanEntry* e : entries) {
          Linear& lin = block.linears[e->index];
          Method& m = *plan.methods[e->method];
          Record rec;
          rec.kind = "linear";
          rec.name = e->name;
          rec.values["layer"] = layer;
          rec.text["role"] = RoleName(e->role);
          rec.text["method"] = m.name();
          rec.text["params"] = m.params().Describe();
          rec.values["out_features"] = lin.out_features();
          rec.values["in_features"] = lin.in_features();
          auto t0 = std::chrono::steady_clock::now();
          m.CompressLinear(lin, *hooks.targets()[e->index].stats, rec);
          rec.values["seconds"] = Seconds(t0) + transform_s / static_cast<double>(todo.size());
          PC_CHECK(at::isfinite(lin.weight).all().item<bool>(), "compress: ", m.Describe(), " produced non-finite ",
                   "weights for '", e->name, "'");
          // Logged errors on the logging windows.
          const int i = e->index;
          at::Tensor bias = lin.bias.defined() ? lin.bias.to(at::kFloat) : at::Tensor();
          at::Tensor y_hat = at::linear(post.Get(i), lin.weight.to(at::kFloat), bias);
          at::Tensor out_scale = m.OutputScale(lin);  // (out,) or undefined
          rec.values["err_after"] =
              RelError(y_hat, out_scale.defined() ? y_pre[i] * out_scale.to(at::kFloat).unsqueeze(0) : y_pre[i]);
          at::Tensor naive = m.NaiveWeight(w_orig[i]);
          if (naive.defined()) {
            rec.values["err_before"] =
                RelError(at::linear(x_pre[i], naive.to(at::kFloat),
                                    block.linears[i].bias.defined() ? block.linears[i].bias.to(at::kFloat) : at::Tensor()),
                         y_pre[i]);
          }
          at::Tensor dw = (lin.weight.to(at::kDouble) - w_mid[i].to(at::kDouble));
          double wn = w_mid[i].to(at::kDouble).norm().item<double>();
          rec.values["weight_rel_err"] = wn > 0 ? dw.norm().item<double>() / wn : 0.0;
          rec.values["sparsity"] = (lin.weight == 0).to(at::kDouble).mean().item<double>();
          rec.values["log_tokens"] = static_cast<double>(x_pre[i].size(0));
          result.records.push_back(std::move(rec));
        }
      }
    }
    at::Tensor next = plan.propagate_compressed && !todo.empty() ? RunBlockBatched(model, layer, x, mb) : y_orig;
    if (options.on_block_done) options.on_block_done(layer);
    if (model.HasCheckpoint()) model.UnloadBlock(layer);
    x = next;
    progress.Add(1);
  }
  result.seconds = Seconds(t_start);
  return result;
}

}  // namespace pc
