// bench/compress/prune_bench.cc — Wanda, SparseGPT and GPTQ through the calibration engine on a
// Pythia-160M-shaped random model: wall time, time per linear, peak RSS, and Wanda's pruning step
// (forward passes excluded) against one calibration forward. Prints a table; see docs/PERFORMANCE.md.
//
//   build/bench/compress/prune_bench [--methods wanda,sparsegpt,gptq] [--windows 32] [--seq 512]
//                                    [--layers 12] [--hidden 768] [--threads N]
#include <ATen/ATen.h>

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "bench/model/bench_util.h"
#include "compress/engine.h"
#include "compress/method.h"
#include "core/blas.h"
#include "core/strings.h"
#include "core/threads.h"

namespace {

struct MethodCase {
  std::string label;
  std::string method;
  std::map<std::string, pc::ParamScalar> params;
};

// User + system CPU seconds of this process (all threads).
double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// Forwards everything to the real method and adds the CPU time of CompressLinear to its record
// ("cpu_seconds"): on a loaded machine the engine's wall-clock "seconds" is not the work done.
class CpuTimed final : public pc::Method {
 public:
  explicit CpuTimed(std::unique_ptr<pc::Method> inner)
      : pc::Method(inner->name(), inner->params()), inner_(std::move(inner)) {}
  uint32_t stats() const override { return inner_->stats(); }
  bool WantsOutputs() const override { return inner_->WantsOutputs(); }
  void Accumulate(const pc::Linear& l, const at::Tensor& x, const at::Tensor& y, pc::InputStats& s) const override {
    inner_->Accumulate(l, x, y, s);
  }
  bool TrueSequential() const override { return inner_->TrueSequential(); }
  bool AddsActivationScales() const override { return inner_->AddsActivationScales(); }
  bool TransformsBlock() const override { return inner_->TransformsBlock(); }
  void TransformBlock(pc::BlockScope& scope) override { inner_->TransformBlock(scope); }
  void CompressLinear(pc::Linear& linear, const pc::InputStats& stats, pc::Record& record) override {
    const double c0 = CpuSeconds();
    inner_->CompressLinear(linear, stats, record);
    record.values["cpu_seconds"] = CpuSeconds() - c0;
  }
  at::Tensor OutputScale(const pc::Linear& linear) const override { return inner_->OutputScale(linear); }
  at::Tensor NaiveWeight(const at::Tensor& w) const override { return inner_->NaiveWeight(w); }

 private:
  std::unique_ptr<pc::Method> inner_;
};

pc::Plan PlanFor(pc::Model& model, const MethodCase& c) {
  const pc::MethodInfo& info = pc::MethodRegistry::Builtins().Get(c.method);
  pc::Plan plan;
  plan.methods.push_back(
      std::make_unique<CpuTimed>(info.create(pc::ResolveParams(c.method, info.params, c.params, {}, "bench"), "bench")));
  plan.infos.push_back(&info);
  plan.propagate_compressed = info.default_propagate_compressed;
  for (int l = 0; l < model.num_layers(); ++l) {
    for (size_t i = 0; i < model.block(l).linears.size(); ++i) {
      pc::PlanEntry e;
      e.layer = l;
      e.index = static_cast<int>(i);
      e.name = model.block(l).linears[i].name;
      e.role = model.block(l).linears[i].role;
      e.method = 0;
      plan.entries.push_back(e);
    }
  }
  return plan;
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

}  // namespace

int main(int argc, char** argv) {
  pc::SelectBlasKernels(argv);  // the kernels perpcomp itself runs (core/blas.h)
  int64_t windows = 32, seq = 512, layers = 12, hidden = 768;
  int threads = 0;
  std::string methods = "wanda,sparsegpt,gptq";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--windows")) windows = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--seq")) seq = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--layers")) layers = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--hidden")) hidden = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--methods")) methods = argv[i + 1];
  }
  pc::SetThreads(threads);
  at::NoGradGuard no_grad;
  const int64_t heads = hidden / 64, vocab = 50304;
  std::printf(
      "Pythia-160M-shaped random gpt_neox (hidden %lld, %lld layers, vocab %lld), calibration %lld x %lld "
      "tokens, %d threads\n\n",
      (long long)hidden, (long long)layers, (long long)vocab, (long long)windows, (long long)seq, pc::GetThreads());
  at::Tensor calib = at::randint(0, vocab, {windows, seq}, at::kLong);

  // One calibration forward: the embedding and every block over the calibration windows, in the
  // engine's micro-batches (what the engine's passes cost; the head is never run by the engine).
  double forward_s = 0, forward_cpu = 0;
  {
    auto model = pc::bench::RandomPythia(hidden, layers, heads, vocab);
    const int64_t mb = pc::DefaultMicroBatch(*model, seq);
    auto t0 = std::chrono::steady_clock::now();
    const double c0 = CpuSeconds();
    pc::ForwardContext ctx = model->MakeContext(seq);
    at::Tensor x = at::empty({windows, seq, hidden});
    for (int64_t s = 0; s < windows; s += mb) {
      const int64_t n = std::min(mb, windows - s);
      x.narrow(0, s, n).copy_(model->Embed(calib.narrow(0, s, n), ctx));
    }
    for (int l = 0; l < model->num_layers(); ++l) x = pc::RunBlockBatched(*model, l, x, mb);
    forward_s = Seconds(t0);
    forward_cpu = CpuSeconds() - c0;
    std::printf("one calibration forward (embedding + %lld blocks, micro-batch %lld): %.2f s wall, %.2f s CPU\n\n",
                (long long)layers, (long long)mb, forward_s, forward_cpu);
  }

  const std::vector<MethodCase> all = {
      {"wanda", "wanda", {{"sparsity", 0.5}}},
      {"wanda-2of4", "wanda", {{"sparsity", 0.5}, {"pattern", std::string("2:4")}}},
      {"wanda-perp", "wanda-perp", {{"sparsity", 0.5}}},
      {"sparsegpt", "sparsegpt", {{"sparsity", 0.5}}},
      {"gptq", "gptq", {{"bits", int64_t{4}}, {"group_size", int64_t{128}}}},
      {"gptq-ts", "gptq", {{"bits", int64_t{4}}, {"group_size", int64_t{128}}, {"true_sequential", true}}},
  };
  std::printf("%-12s %8s %8s %8s %12s %9s %9s %10s %10s %10s %10s\n", "method", "wall s", "CPU s", "CPU/fwd",
              "method CPU s", "qkv ms", "dense ms", "h_to_4h ms", "4h_to_h ms", "method/fwd", "peak RSS");
  for (const std::string& want : pc::Split(methods, ',')) {
    for (const MethodCase& c : all) {
      if (c.label != want) continue;
      auto model = pc::bench::RandomPythia(hidden, layers, heads, vocab);
      pc::Plan plan = PlanFor(*model, c);
      pc::bench::ResetPeakRss();
      pc::EngineOptions eo;
      auto t0 = std::chrono::steady_clock::now();
      const double c0 = CpuSeconds();
      pc::CompressResult r = pc::RunCompression(*model, plan, calib, eo);
      const double wall = Seconds(t0), cpu = CpuSeconds() - c0;
      double method_s = 0;
      std::map<std::string, std::pair<double, int>> by_role;
      for (const auto& rec : r.records) {
        if (rec.kind != "linear") continue;
        method_s += rec.values.at("cpu_seconds");
        auto& acc = by_role[rec.text.at("role")];
        acc.first += rec.values.at("cpu_seconds");
        acc.second += 1;
      }
      auto ms = [&](const char* role) {
        auto it = by_role.find(role);
        return it == by_role.end() ? 0.0 : 1e3 * it->second.first / it->second.second;
      };
      std::printf("%-12s %8.2f %8.2f %8.2f %12.2f %9.1f %9.1f %10.1f %10.1f %10.3f %10s\n", c.label.c_str(), wall, cpu,
                  cpu / forward_cpu, method_s, ms("qkv"), ms("o"), ms("up"), ms("down"), method_s / forward_cpu,
                  pc::HumanBytes(pc::bench::PeakRssBytes()).c_str());
      std::fflush(stdout);
    }
  }
  std::printf(
      "\nwall s / CPU s: the whole engine run (statistics, method, logged errors, propagation); CPU/fwd: its\n"
      "CPU time over one calibration forward's. method CPU s: the methods' own CPU time (CompressLinear summed\n"
      "over the linears; statistics passes, logging and forwards excluded); per-role columns: its mean per\n"
      "linear (CPU ms). method/fwd: method CPU s over one calibration forward's CPU time (the shared machine's\n"
      "wall clock is unreliable; with --threads 1 CPU time is the work). peak RSS: VmHWM since the run started.\n");
  return 0;
}
