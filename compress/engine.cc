#include "compress/engine.h"

#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "core/cpu_allocator.h"
#include "core/error.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/tensor_util.h"
#include "model/sizes.h"

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

PlanEntry Plan::DefaultHead() {
  PlanEntry e;
  e.layer = -1;
  e.index = -1;
  e.skip_reason = "output head: not compressed unless a recipe targets it";
  return e;
}

int64_t DefaultMicroBatch(const Model& model, int64_t seq_len) { return DefaultMicroBatch(model.config(), seq_len); }

namespace {

// A forward that overflows gives NaN or Inf, and every later block and statistic inherits it (the
// methods then log NaN, then 0): stop at the first block whose outputs are not finite, naming it.
void CheckFiniteActivations(const at::Tensor& y, const Block& block, int layer) {
  const at::Tensor bad = at::isfinite(y).logical_not();
  const int64_t n = bad.sum().item<int64_t>();
  if (n == 0) return;
  std::string name = Str("block ", layer);
  if (!block.linears.empty()) {  // "model.layers.3.self_attn.q_proj" -> "model.layers.3"
    const std::string& lin = block.linears.front().name;
    const std::string key = Str(".", layer, ".");
    const size_t at = lin.find(key);
    if (at != std::string::npos) name = Str(name, " ('", lin.substr(0, at + key.size() - 1), "')");
  }
  PC_THROW("compress: the outputs of ", name, " are not finite on the calibration windows (", n, " of ", y.numel(),
           " values are NaN or Inf in ", c10::toString(y.scalar_type()),
           "): the model's forward overflows there; nothing was written (check the checkpoint's weights, or compute "
           "in float32)");
}

}  // namespace

at::Tensor RunBlockBatched(Model& model, int layer, const at::Tensor& x, int64_t micro_batch, ForwardHooks* hooks,
                           at::Tensor out) {
  const int64_t N = x.size(0), L = x.size(1);
  if (!out.defined()) out = at::empty_like(x);
  ForwardContext ctx = model.MakeContext(L, 0, hooks);
  for (int64_t s = 0; s < N; s += micro_batch) {
    const int64_t n = std::min(micro_batch, N - s);
    out.narrow(0, s, n).copy_(model.BlockForward(layer, x.narrow(0, s, n), ctx));
  }
  return out;
}

namespace {

void AddTo(at::Tensor& acc, const at::Tensor& v) {
  if (acc.defined()) acc.add_(v); else acc = v.clone();
}

// Adds the rows of `flat` (n, in) float32, one linear's inputs, to the statistics `kinds` asks for;
// the Gram matrix goes into `gram`, which FinishInput turns into s.gram once every batch is in.
void AccumulateInput(InputStats& s, uint32_t kinds, const at::Tensor& flat, GramAccumulator& gram) {
  s.tokens += flat.size(0);
  if (kinds & kStatAbsSum) AddTo(s.abs_sum, flat.abs().sum(0).to(at::kDouble));
  if (kinds & kStatSqSum) AddTo(s.sq_sum, (flat * flat).sum(0).to(at::kDouble));
  if (kinds & kStatGram) gram.Add(flat);
}

void FinishInput(InputStats& s, GramAccumulator& gram) {
  if (!gram.empty()) s.gram = gram.Finish();
}

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
      // Linears fed by the same tensor (q, k, v; gate, up: the same InputIndex of their role, within
      // one forward) share one accumulation. Keyed by the site, not by the tensor's data pointer: a
      // freed buffer reused for another input would otherwise merge two inputs' statistics.
      const int input = InputIndex(block_.linears[site.index].role);
      auto shared = by_input_.find(input);
      if (shared != by_input_.end() && shared->second.second == t.kinds) {
        t.stats = shared->second.first;
        return x;
      }
      by_input_[input] = {t.stats, t.kinds};
      AccumulateInput(*t.stats, t.kinds, flat, grams_[t.stats.get()]);
    } else if (t.method != nullptr) {
      at::Tensor y = x.reshape({-1, x.size(-1)}).to(at::kFloat);
      t.method->Accumulate(block_.linears[site.index], last_input_[site.index], y, *t.stats);
    }
    return x;
  }

  void NewBatch() { by_input_.clear(); }
  // After the last batch: completes the statistics (the Gram matrices).
  void Finish() {
    for (auto& [stats, gram] : grams_) FinishInput(*stats, gram);
    grams_.clear();
  }
  std::map<int, Target>& targets() { return targets_; }
  // Whether a method reads linear `index`'s outputs.
  bool WantsOutput(int index) const {
    auto it = targets_.find(index);
    return it != targets_.end() && it->second.method != nullptr;
  }

 private:
  const Block& block_;
  std::map<int, Target> targets_;
  std::map<int, std::pair<std::shared_ptr<InputStats>, uint32_t>> by_input_;  // InputIndex -> first accumulation
  std::map<int, at::Tensor> last_input_;
  std::map<InputStats*, GramAccumulator> grams_;  // per accumulation, until Finish
};

// Captures the inputs of the logged linears on the logging windows: (n, in) float32 per input
// tensor, concatenated over micro-batches. Linears that read the same tensor (InputIndex: q, k, v;
// gate, up) share one capture, taken at the first of them. With `outputs`, also each logged
// linear's output column sums of squares (out,) float64: the denominator of its logged error,
// taken from the forward instead of recomputed. Told each batch's place (Batch()), it takes only
// the first `windows` windows of the pass, so a pass over all calibration windows can take it.
class CaptureHooks : public ForwardHooks {
 public:
  // linear index -> InputIndex of its role, for every logged linear
  CaptureHooks(const std::map<int, int>& input_of, bool outputs, int64_t windows)
      : input_of_(input_of), outputs_(outputs), windows_(windows) {
    for (const auto& [index, input] : input_of_) first_.emplace(input, index);  // lowest index per input
  }
  bool Wants(SiteKind k) const override {
    return k == SiteKind::kLinearInput || (outputs_ && k == SiteKind::kLinearOutput);
  }
  // The next batch holds windows first .. first + n − 1 of the pass. Without it every window of
  // every batch is taken.
  void Batch(int64_t first, int64_t n) { take_ = std::max<int64_t>(0, std::min(n, windows_ - first)); }
  // Whether the current batch needs linear `index`'s outputs.
  bool WantsOutput(int index) const { return outputs_ && take_ != 0 && input_of_.count(index) > 0; }
  at::Tensor At(const Site& site, const at::Tensor& x, const at::Tensor&) override {
    auto it = input_of_.find(site.index);
    if (it == input_of_.end() || take_ == 0) return x;
    at::Tensor flat = x.reshape({-1, x.size(-1)});  // (B*T, features), x (B, T, features)
    if (take_ > 0 && take_ < x.size(0)) flat = flat.narrow(0, 0, take_ * x.size(1));
    if (site.kind == SiteKind::kLinearOutput) {
      AddTo(out_sq_[site.index], flat.to(at::kFloat).square().sum(0).to(at::kDouble));  // (out,)
    } else if (first_.at(it->second) == site.index) {
      parts_[it->second].push_back(flat.to(at::kFloat));
    }
    return x;
  }
  // The captured input of linear `index` (n, in); the parts are joined once, not copied per call.
  at::Tensor Get(int index) {
    auto it = parts_.find(input_of_.at(index));
    PC_ASSERT(it != parts_.end(), "no captured input for linear ", index);
    std::vector<at::Tensor>& parts = it->second;
    if (parts.size() > 1) parts = {at::cat(parts, 0)};
    return parts.front();
  }
  // Σ over the captured rows of linear `index`'s output squared (out,) float64; undefined
  // without `outputs`.
  at::Tensor OutputSquares(int index) const {
    auto it = out_sq_.find(index);
    return it != out_sq_.end() ? it->second : at::Tensor();
  }

 private:
  std::map<int, int> input_of_;
  bool outputs_;
  int64_t windows_;   // windows of a pass taken when told the batches
  int64_t take_ = -1;  // of the current batch: -1 all, else its first take_ windows
  std::map<int, int> first_;                     // input index -> linear index captured
  std::map<int, std::vector<at::Tensor>> parts_;  // input index -> micro-batches
  std::map<int, at::Tensor> out_sq_;              // linear index -> (out,) float64
};

// Both hooks, in order, on one pass (CaptureHooks and StatsHooks observe without replacing).
class TeeHooks : public ForwardHooks {
 public:
  TeeHooks(ForwardHooks& a, ForwardHooks& b) : a_(a), b_(b) {}
  bool Wants(SiteKind k) const override { return a_.Wants(k) || b_.Wants(k); }
  at::Tensor At(const Site& site, const at::Tensor& x, const at::Tensor& incoming) override {
    at::Tensor y = a_.Wants(site.kind) ? a_.At(site, x, incoming) : x;
    return b_.Wants(site.kind) ? b_.At(site, y, incoming) : y;
  }

 private:
  ForwardHooks& a_;
  ForwardHooks& b_;
};

// Runs block `layer` on x (N, L, d) in micro-batches of mb windows into a new tensor (like
// RunBlockBatched), while `capture` takes its windows.
at::Tensor RunBlockCapturing(Model& model, int layer, const at::Tensor& x, int64_t mb, CaptureHooks& capture) {
  const int64_t N = x.size(0), L = x.size(1);
  at::Tensor out = at::empty_like(x);
  ForwardContext ctx = model.MakeContext(L, 0, &capture);
  for (int64_t s = 0; s < N; s += mb) {
    const int64_t n = std::min(mb, N - s);
    capture.Batch(s, n);
    out.narrow(0, s, n).copy_(model.BlockForward(layer, x.narrow(0, s, n), ctx));
  }
  return out;
}

// A linear's weight and bias as they were at some point (model dtype).
struct LinearCopy {
  at::Tensor weight, bias;
  explicit LinearCopy(const Linear& l) : weight(l.weight.clone()), bias(l.bias.defined() ? l.bias.clone() : at::Tensor()) {}
  LinearCopy(at::Tensor w, at::Tensor b) : weight(std::move(w)), bias(std::move(b)) {}
};

constexpr int64_t kLogRows = 128;  // rows per chunk of the weight error: the float64 temporaries stay a few MB

// Rows per chunk of a product with `out` columns: about 2^20 outputs (8 MiB in float64).
int64_t OutputChunkRows(int64_t out) { return std::max<int64_t>(16, (int64_t{1} << 20) / std::max<int64_t>(1, out)); }

at::Tensor F32(const at::Tensor& t) { return t.defined() ? t.to(at::kFloat) : at::Tensor(); }

double Ratio(double num, double den) { return den > 0 ? num / den : (num > 0 ? INFINITY : 0.0); }

// Σ over the rows of x (n, in) of ‖x dᵀ + c‖² in float64, in row chunks; d (out, in) float32,
// c (out,) or undefined.
double SquaredOutputs(const at::Tensor& x, const at::Tensor& d, const at::Tensor& c) {
  const int64_t rows = OutputChunkRows(d.size(0));
  double sum = 0;
  for (int64_t r = 0; r < x.size(0); r += rows) {
    sum += at::linear(x.narrow(0, r, std::min(rows, x.size(0) - r)), d, c).to(at::kDouble).square().sum().item<double>();
  }
  return sum;
}

// ‖(x̂ ŵᵀ + b̂) − s ⊙ (x wᵀ + b)‖² / ‖s ⊙ (x wᵀ + b)‖² over the rows of x̂, x (n, in); s (out,) or
// undefined (1). ref_sq (out,) float64: Σ over the rows of (x wᵀ + b)², when the forward gave it
// (CaptureHooks), else computed here. When x̂ is x and s is 1, the numerator is ‖x (ŵ − w)ᵀ +
// (b̂ − b)‖²: one product instead of two, without the cancellation of subtracting them. Computed in
// row chunks, so the outputs are never held whole.
double RelOutputError(const at::Tensor& x_hat, const LinearCopy& hat, const at::Tensor& x, const LinearCopy& ref,
                      const at::Tensor& out_scale, const at::Tensor& ref_sq) {
  const at::Tensor w_hat = F32(hat.weight), b_hat = F32(hat.bias), w = F32(ref.weight), b = F32(ref.bias);
  const at::Tensor s = out_scale.defined() ? F32(out_scale).unsqueeze(0) : at::Tensor();  // (1, out)
  double den = 0;
  if (ref_sq.defined()) {
    den = (s.defined() ? ref_sq * s.squeeze(0).to(at::kDouble).square() : ref_sq).sum().item<double>();
  } else {
    den = s.defined() ? SquaredOutputs(x, w * s.t(), b.defined() ? b * s.squeeze(0) : b) : SquaredOutputs(x, w, b);
  }
  if (x_hat.is_same(x) && !s.defined()) {
    at::Tensor db;  // (out,) b̂ − b, undefined when neither has a bias
    if (b_hat.defined() && b.defined()) {
      db = b_hat - b;
    } else if (b_hat.defined() || b.defined()) {
      db = b_hat.defined() ? b_hat : -b;
    }
    return Ratio(SquaredOutputs(x, w_hat - w, db), den);
  }
  const int64_t rows = OutputChunkRows(w.size(0));
  double num = 0;
  for (int64_t r = 0; r < x.size(0); r += rows) {
    const int64_t k = std::min(rows, x.size(0) - r);
    at::Tensor y = at::linear(x.narrow(0, r, k), w, b);  // (k, out)
    if (s.defined()) y = y * s;
    num += (at::linear(x_hat.narrow(0, r, k), w_hat, b_hat).to(at::kDouble) - y.to(at::kDouble)).square().sum().item<double>();
  }
  return Ratio(num, den);
}

// ‖ŵ − w‖ / ‖w‖ in float64, in row chunks.
double RelWeightError(const at::Tensor& w_hat, const at::Tensor& w) {
  double num = 0, den = 0;
  for (int64_t r = 0; r < w.size(0); r += kLogRows) {
    const int64_t k = std::min(kLogRows, w.size(0) - r);
    at::Tensor w64 = w.narrow(0, r, k).to(at::kDouble);
    num += (w_hat.narrow(0, r, k).to(at::kDouble) - w64).pow(2).sum().item<double>();
    den += w64.pow(2).sum().item<double>();
  }
  return den > 0 ? std::sqrt(num / den) : 0.0;
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// The logged values of a linear `m` compressed: its output error on the logging windows (x_hat:
// the inputs it sees now, x: the original's inputs, orig: the original weights), and the error of
// the naive counterpart, the weight change from `start` (what the method compressed) and the
// sparsity. ref_sq: the original outputs' column sums of squares on x (CaptureHooks), or undefined.
// Refuses non-finite weights, naming the linear.
void LogCompressed(const Method& m, const Linear& lin, const std::string& name, const at::Tensor& x_hat,
                   const at::Tensor& x, const LinearCopy& orig, const LinearCopy& start, const at::Tensor& ref_sq,
                   Record& rec) {
  PC_CHECK(at::isfinite(lin.weight).all().item<bool>(), "compress: ", m.Describe(), " produced non-finite ",
           "weights for '", name, "'");
  const LinearCopy now(lin.weight, lin.bias);
  rec.values["err_after"] = RelOutputError(x_hat, now, x, orig, m.OutputScale(lin), ref_sq);
  at::Tensor naive = m.NaiveWeight(orig.weight);
  if (naive.defined()) {
    rec.values["err_before"] = RelOutputError(x, LinearCopy(naive, orig.bias), x, orig, at::Tensor(), ref_sq);
  }
  rec.values["weight_rel_err"] = RelWeightError(lin.weight, start.weight);
  rec.values["sparsity"] =
      static_cast<double>((lin.weight == 0).sum().item<int64_t>()) / static_cast<double>(lin.weight.numel());
  rec.values["log_tokens"] = static_cast<double>(x.size(0));
}

// Observes the final norm's output (the head's input) as (n, d) float32.
class FinalNormHook : public ForwardHooks {
 public:
  bool Wants(SiteKind k) const override { return k == SiteKind::kFinalNorm; }
  at::Tensor At(const Site&, const at::Tensor& x, const at::Tensor&) override {
    last = x.reshape({-1, x.size(-1)}).to(at::kFloat);
    return x;
  }
  at::Tensor last;
};

// Compresses the output head (plan.head) on x (N, L, d), the last block's calibration outputs:
// its input statistics over final_norm(x) (x itself without a final norm), taken through
// Model::Head in batches sized for the logits (the methods that want outputs get them), then
// CompressLinear, then the log on the first `log_n` windows. ResolvePlan refuses what this cannot
// do (a tied head, a block transform, OPT's project_out before the head).
void CompressHead(Model& model, Plan& plan, const at::Tensor& x, int64_t log_n, CompressResult& result) {
  const PlanEntry& e = plan.head;
  Method& m = *plan.methods[e.method];
  PC_ASSERT(!m.TransformsBlock() && !model.tied(), "the head's plan entry should have been refused");
  if (!model.lm_head().weight.defined()) model.LoadHead();
  Linear& head = model.lm_head();
  const int64_t N = x.size(0), L = x.size(1);
  const int64_t mb = DefaultEvalBatch(model.config(), L);
  InputStats stats;
  GramAccumulator gram;
  std::vector<at::Tensor> log_parts;  // the head's inputs on the logging windows
  for (int64_t s = 0; s < N; s += mb) {
    const int64_t n = std::min(mb, N - s);
    FinalNormHook hook;
    ForwardContext ctx = model.MakeContext(L, 0, &hook);
    at::Tensor logits = model.Head(x.narrow(0, s, n), ctx);  // (n, L, V)
    at::Tensor in = model.config().has_final_norm ? hook.last : x.narrow(0, s, n).reshape({-1, x.size(2)}).to(at::kFloat);
    AccumulateInput(stats, m.stats(), in, gram);
    if (m.WantsOutputs()) m.Accumulate(head, in, logits.reshape({-1, logits.size(-1)}), stats);
    if (s < log_n) log_parts.push_back(in.narrow(0, 0, std::min(n, log_n - s) * L));
  }
  FinishInput(stats, gram);
  const at::Tensor x_log = at::cat(log_parts, 0);  // (log_n * L, d)
  Record rec;
  rec.kind = "linear";
  rec.name = e.name;
  rec.values["layer"] = -1;
  rec.text["role"] = "head";
  rec.text["method"] = m.name();
  rec.text["params"] = m.params().Describe();
  rec.values["out_features"] = head.out_features();
  rec.values["in_features"] = head.in_features();
  const LinearCopy start(head);
  const auto t0 = std::chrono::steady_clock::now();
  m.CompressLinear(head, stats, rec);
  rec.values["seconds"] = Seconds(t0);
  LogCompressed(m, head, e.name, x_log, x_log, start, start, at::Tensor(), rec);
  result.records.push_back(std::move(rec));
}

// One linear to compress in a block: its index in Block::linears and its method.
struct StageLinear {
  int index;
  Method* method;
};

// Compresses `linears` of block `layer` on its inputs x (N, L, d), stage by stage: one stage, or one
// per input of the block (InputIndex) for the linears whose method is true-sequential, so a later
// stage's statistics see the earlier stages' compressed outputs. Each stage takes the statistics
// its members' methods ask for (and their outputs, for the methods that want them) in one pass
// over x in micro-batches of `mb` windows, none when no member needs any, then calls
// compress(k, stats) for each member k (an index into `linears`) in order. With `capture`, the
// (then only) stage's pass also feeds it, before any member is compressed. Returns the passes run.
int CompressByStage(Model& model, int layer, const at::Tensor& x, int64_t mb, const std::vector<StageLinear>& linears,
                    CaptureHooks* capture, const std::function<void(size_t, const InputStats&)>& compress) {
  Block& block = model.block(layer);
  std::map<int, std::vector<size_t>> stages;  // stage -> members (indices into linears)
  for (size_t k = 0; k < linears.size(); ++k) {
    const StageLinear& l = linears[k];
    stages[l.method->TrueSequential() ? InputIndex(block.linears[l.index].role) : 0].push_back(k);
  }
  const int64_t N = x.size(0), L = x.size(1);
  int passes = 0;
  for (auto& [stage, members] : stages) {
    std::map<int, StatsHooks::Target> targets;
    bool any = false;
    for (size_t k : members) {
      const Method& m = *linears[k].method;
      StatsHooks::Target t;
      t.kinds = m.stats();
      t.method = m.WantsOutputs() ? &m : nullptr;
      t.stats = std::make_shared<InputStats>();
      any = any || t.kinds != 0 || t.method != nullptr;
      targets[linears[k].index] = t;
    }
    StatsHooks hooks(block, targets);
    PC_ASSERT(capture == nullptr || (any && stages.size() == 1), "a capture needs the one stage's pass");
    if (any) {
      std::optional<TeeHooks> both;
      if (capture != nullptr) both.emplace(*capture, hooks);
      ForwardContext ctx = model.MakeContext(L, 0, both ? static_cast<ForwardHooks*>(&*both) : &hooks);
      const int down = block.index_of[int(Role::kDown)];
      for (int64_t s = 0; s < N; s += mb) {
        const int64_t n = std::min(mb, N - s);
        hooks.NewBatch();
        if (capture != nullptr) capture->Batch(s, n);
        // The pass needs the block's outputs for nothing: it ends at the last linear's input unless a
        // hook reads that linear's outputs.
        ctx.stop_at_last_input =
            down >= 0 && !hooks.WantsOutput(down) && (capture == nullptr || !capture->WantsOutput(down));
        model.BlockForward(layer, x.narrow(0, s, n), ctx);
      }
      hooks.Finish();
      ++passes;
    }
    for (size_t k : members) compress(k, *hooks.targets()[linears[k].index].stats);
  }
  return passes;
}

}  // namespace

int CompressLinearsAlone(Model& model, int layer, const at::Tensor& x, Method& m, const std::vector<int>& members,
                         int64_t micro_batch, std::vector<Record>* records) {
  at::NoGradGuard no_grad;
  Block& block = model.block(layer);
  std::vector<Record> scratch;
  std::vector<Record>& recs = records != nullptr ? *records : scratch;
  if (m.TransformsBlock()) {
    BlockScope scope{model, layer, x, members, micro_batch, &recs};
    m.TransformBlock(scope);
    FoldedScales drop;  // the scan compares block outputs, which the folding leaves unchanged
    m.TakeFoldedScales(drop);
  }
  std::vector<StageLinear> linears;
  for (int i : members) linears.push_back({i, &m});
  return CompressByStage(model, layer, x, micro_batch, linears, nullptr, [&](size_t k, const InputStats& stats) {
    Linear& lin = block.linears[linears[k].index];
    Record rec;
    rec.kind = "linear";
    rec.name = lin.name;
    rec.values["layer"] = layer;
    rec.text["method"] = m.name();
    m.CompressLinear(lin, stats, rec);
    PC_CHECK(at::isfinite(lin.weight).all().item<bool>(), "compress: ", m.Describe(), " produced non-finite weights for '",
             lin.name, "'");
    recs.push_back(std::move(rec));
  });
}

// Without such a method (RTN, magnitude pruning) the weights do not depend on the calibration,
// which then only feeds the logged per-linear errors.
bool PlanReadsCalibration(const Plan& plan) {
  for (const auto& m : plan.methods) {
    if (m->stats() != 0 || m->WantsOutputs() || m->TransformsBlock() || m->AddsActivationScales()) return true;
  }
  return false;
}

CompressResult RunCompression(Model& model, Plan& plan, const at::Tensor& calib, const EngineOptions& options) {
  PC_CHECK(calib.dim() == 2 && calib.size(0) > 0, "compress: no calibration windows");
  at::NoGradGuard no_grad;
  const auto t_start = std::chrono::steady_clock::now();
  const int64_t L = calib.size(1);
  const int64_t log_n = std::min<int64_t>(calib.size(0), std::max<int64_t>(1, options.log_windows));
  const int64_t N = PlanReadsCalibration(plan) ? calib.size(0) : log_n;  // the windows the blocks run on
  const int64_t mb = options.micro_batch > 0 ? options.micro_batch : DefaultMicroBatch(model, L);
  CompressResult result;
  result.calib_windows = N;
  const bool act_scales = plan.AddsActivationScales() && *model.arch().act_scales != '\0';

  ForwardContext ctx0 = model.MakeContext(L);
  at::Tensor x = at::empty({N, L, model.config().hidden}, at::TensorOptions().dtype(model.compute_dtype()));
  for (int64_t s = 0; s < N; s += mb) {
    const int64_t n = std::min(mb, N - s);
    x.narrow(0, s, n).copy_(model.Embed(calib.narrow(0, s, n), ctx0));
  }
  if (options.release_embeddings) {
    model.embed() = at::Tensor();
    model.pos_embed() = at::Tensor();
    if (model.config().tie_embeddings) model.lm_head().weight = at::Tensor();  // the same storage
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
    // The log compares every compressed linear with the original on the logging windows: the
    // original inputs and outputs, and the weights as they were before any transform. They are
    // taken on the first pass over the windows with the original weights: the original outputs'
    // pass, or the statistics pass when it is the only one and no transform comes first, or else
    // a pass of their own over the logging windows.
    std::map<int, int> input_of;  // linear index -> InputIndex
    for (const PlanEntry* e : todo) input_of[e->index] = InputIndex(e->role);
    CaptureHooks pre(input_of, /*outputs=*/true, log_n);
    bool captured = false;
    at::Tensor y_orig;  // (N, L, d) the original block's outputs, when those feed the next block
    if (!plan.propagate_compressed || todo.empty()) {
      if (todo.empty()) {
        y_orig = RunBlockBatched(model, layer, x, mb);
      } else {
        y_orig = RunBlockCapturing(model, layer, x, mb, pre);
        captured = true;
      }
      CheckFiniteActivations(y_orig, block, layer);  // before any compression work on this block
    }
    if (!todo.empty()) {
      std::map<int, std::vector<int>> members;  // method -> linear indices
      for (const PlanEntry* e : todo) members[e->method].push_back(e->index);
      bool transforms = false, staged = false, pass = false;
      for (const auto& [m, idx] : members) {
        const Method& method = *plan.methods[m];
        transforms = transforms || method.TransformsBlock();
        staged = staged || method.TrueSequential();
        pass = pass || method.stats() != 0 || method.WantsOutputs();
      }
      const bool capture_in_stats_pass = !captured && !transforms && !staged && pass;
      if (!captured && !capture_in_stats_pass) {
        RunBlockCapturing(model, layer, x.narrow(0, 0, log_n), mb, pre);
      }
      // Block transforms (AWQ). Only then do the inputs and weights the methods start from differ
      // from the original ones, and are both kept.
      std::map<int, LinearCopy> original;  // linear index -> before the transform
      std::optional<CaptureHooks> post;    // inputs after the transform
      double transform_s = 0;
      if (transforms) {
        for (const auto& [index, input] : input_of) original.emplace(index, LinearCopy(block.linears[index]));
        auto t_transform = std::chrono::steady_clock::now();
        for (auto& [m, idx] : members) {
          if (!plan.methods[m]->TransformsBlock()) continue;
          BlockScope scope{model, layer, x, idx, mb, &result.records};
          plan.methods[m]->TransformBlock(scope);
        }
        transform_s = Seconds(t_transform);
        post.emplace(input_of, /*outputs=*/false, log_n);
        RunBlockBatched(model, layer, x.narrow(0, 0, log_n), mb, &*post);
      }
      CaptureHooks& x_mid = transforms ? *post : pre;
      std::vector<StageLinear> linears;
      for (const PlanEntry* e : todo) linears.push_back({e->index, plan.methods[e->method].get()});
      CompressByStage(model, layer, x, mb, linears, capture_in_stats_pass ? &pre : nullptr,
                      [&](size_t k, const InputStats& stats) {
        const PlanEntry* e = todo[k];
        const int i = e->index;
        Linear& lin = block.linears[i];
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
        const LinearCopy start(lin);  // what the method compresses (after any transform)
        auto t0 = std::chrono::steady_clock::now();
        m.CompressLinear(lin, stats, rec);
        rec.values["seconds"] = Seconds(t0) + transform_s / static_cast<double>(todo.size());
        auto orig_it = original.find(i);
        LogCompressed(m, lin, e->name, x_mid.Get(i), pre.Get(i), orig_it != original.end() ? orig_it->second : start,
                      start, pre.OutputSquares(i), rec);
        result.records.push_back(std::move(rec));
        if (orig_it != original.end()) original.erase(orig_it);
      });
    }
    for (auto& m : plan.methods) {
      if (m->TransformsBlock()) m->TakeFoldedScales(result.folded);
    }
    at::Tensor next = y_orig;
    if (!y_orig.defined()) {  // the compressed block's outputs replace its inputs, window by window
      next = RunBlockBatched(model, layer, x, mb, nullptr, x);
    }
    if (!y_orig.defined()) CheckFiniteActivations(next, block, layer);
    // The block's freed buffers were reused inside it (core/cpu_allocator.h); what stays cached
    // goes back before the block is written, whose buffers are not tensors.
    ReleaseCachedCpuBuffers();
    if (options.on_block_done) options.on_block_done(layer);
    if (model.HasCheckpoint()) model.UnloadBlock(layer);
    x = next;
    progress.Add(1);
  }
  if (plan.head.method >= 0) CompressHead(model, plan, x, log_n, result);
  result.seconds = Seconds(t_start);
  return result;
}

}  // namespace pc
