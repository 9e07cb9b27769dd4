// bench/compress/awq_bench.cc — AWQ through the calibration engine on a Pythia-160M-shaped random
// model streamed from disk, as `perpcomp compress` runs it: wall time, its ratio to one forward
// (with the head) over the same calibration windows, time split (search / clip / rest), and
// peak RSS against the checkpoint's size. Prints a table; see docs/PERFORMANCE.md.
//
//   build/bench/compress/awq_bench [--methods awq,perp-awq,rtn] [--windows 32] [--seq 512]
//                                  [--layers 12] [--hidden 768] [--threads N] [--clip 1] [--dir D]
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
#include "core/fs.h"
#include "core/log.h"
#include "core/strings.h"
#include "core/threads.h"
#include "model/safetensors.h"

namespace {

double Seconds(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// CPU seconds (user + system) of this process: the work done, whatever else runs on the machine.
double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

pc::Plan PlanFor(const pc::Model& model, const std::string& method, const std::map<std::string, pc::ParamScalar>& p) {
  const pc::MethodInfo& info = pc::MethodRegistry::Builtins().Get(method);
  pc::Plan plan;
  plan.methods.push_back(info.create(pc::ResolveParams(method, info.params, p, {}, "bench"), "bench"));
  plan.infos.push_back(&info);
  plan.propagate_compressed = info.default_propagate_compressed;
  const pc::ArchSpec& a = model.arch();
  for (int l = 0; l < model.num_layers(); ++l) {
    for (size_t i = 0; i < a.linears.size(); ++i) {
      pc::PlanEntry e;
      e.layer = l;
      e.index = static_cast<int>(i);
      e.name = pc::ExpandName(a.linears[i].name.hf, l);
      e.role = a.linears[i].role;
      e.method = 0;
      plan.entries.push_back(e);
    }
  }
  return plan;
}

}  // namespace

int main(int argc, char** argv) {
  pc::SelectBlasKernels(argv);  // the kernels perpcomp itself runs (core/blas.h)
  int64_t windows = 32, seq = 512, layers = 12, hidden = 768;
  int threads = 0;
  bool clip = true;
  std::string methods = "awq,perp-awq,rtn", dir;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--windows")) windows = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--seq")) seq = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--layers")) layers = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--hidden")) hidden = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--methods")) methods = argv[i + 1];
    if (!std::strcmp(argv[i], "--clip")) clip = std::atoi(argv[i + 1]) != 0;
    if (!std::strcmp(argv[i], "--dir")) dir = argv[i + 1];
    if (!std::strcmp(argv[i], "--verbose")) pc::log::SetLevel(std::atoi(argv[i + 1]) ? pc::log::Level::kVerbose : pc::log::Level::kWarn);
  }
  pc::SetThreads(threads);
  at::NoGradGuard no_grad;
  const int64_t heads = hidden / 64, vocab = 50304;
  if (dir.empty()) dir = "/tmp/perpcomp-awq-bench-" + std::to_string(hidden) + "x" + std::to_string(layers);
  if (!pc::fs::Exists(dir + "/config.json")) pc::bench::WriteRandomPythia(dir, hidden, layers, heads, vocab, 0);
  const double ckpt_bytes = static_cast<double>(pc::Checkpoint::Open(dir)->TotalBytes());
  at::Tensor calib = at::randint(0, vocab, {windows, seq}, at::kLong);
  std::printf("Pythia-shaped random gpt_neox (hidden %lld, %lld layers, %lld heads, vocab %lld, checkpoint %s f32), "
              "calibration %lld x %lld tokens, %d threads\n\n",
              (long long)hidden, (long long)layers, (long long)heads, (long long)vocab,
              pc::HumanBytes(ckpt_bytes).c_str(), (long long)windows, (long long)seq, pc::GetThreads());

  struct Row {
    std::string what;
    double wall = 0, cpu = 0, peak = 0;
    std::string note;
  };
  std::vector<Row> rows;
  for (const std::string& method : pc::Split(methods, ',')) {
    std::map<std::string, pc::ParamScalar> p = {{"bits", int64_t{4}}, {"group_size", int64_t{128}}};
    if (method != "rtn") p["clip"] = clip;
    pc::LoadOptions lo;
    lo.load_blocks = false;  // streamed, as `perpcomp compress`
    auto model = pc::Model::Load(dir, lo);
    pc::Plan plan = PlanFor(*model, method, p);
    pc::bench::ResetPeakRss();
    auto t0 = std::chrono::steady_clock::now();
    const double c0 = CpuSeconds();
    pc::EngineOptions eo;
    pc::CompressResult r = pc::RunCompression(*model, plan, calib, eo);
    Row row{method, Seconds(t0), CpuSeconds() - c0, pc::bench::PeakRssBytes(), ""};
    std::map<std::string, double> by_kind;
    for (const auto& rec : r.records) {
      if (rec.kind == "awq_group" && rec.values.count("seconds")) by_kind[rec.text.at("kind")] += rec.values.at("seconds");
    }
    for (const auto& [k, v] : by_kind) row.note += pc::Str(k, " ", pc::FormatDouble(v, 3), " s; ");
    rows.push_back(row);
  }
  // One forward (embedding, blocks, head) over the calibration windows, in the engine's micro-batches,
  // timed by part: the engine runs the embedding once and every block, never the head, so AWQ's cost
  // per block over one block's forward does not depend on the layer count, and the ratio to a full
  // forward at another depth follows from the parts (below).
  Row fwd{"forward", 0, 0, 0, "(the model loaded whole)"};
  double embed_cpu = 0, blocks_cpu = 0, head_cpu = 0;
  {
    auto model = pc::Model::Load(dir);
    const int64_t mb = pc::DefaultMicroBatch(*model, seq);
    auto t0 = std::chrono::steady_clock::now();
    double c0 = CpuSeconds();
    pc::ForwardContext ctx = model->MakeContext(seq);
    at::Tensor x = at::empty({windows, seq, hidden});
    for (int64_t s = 0; s < windows; s += mb) {
      const int64_t n = std::min(mb, windows - s);
      x.narrow(0, s, n).copy_(model->Embed(calib.narrow(0, s, n), ctx));
    }
    embed_cpu = CpuSeconds() - c0;
    c0 = CpuSeconds();
    for (int l = 0; l < model->num_layers(); ++l) x = pc::RunBlockBatched(*model, l, x, mb);
    blocks_cpu = CpuSeconds() - c0;
    c0 = CpuSeconds();
    for (int64_t s = 0; s < windows; s += mb) model->Head(x.narrow(0, s, std::min(mb, windows - s)), ctx);
    head_cpu = CpuSeconds() - c0;
    fwd.wall = Seconds(t0);
    fwd.cpu = embed_cpu + blocks_cpu + head_cpu;
  }
  std::printf("%-10s %9s %9s %10s %10s %11s %10s   %s\n", "method", "wall s", "cpu s", "wall/fwd", "cpu/fwd",
              "peak RSS", "RSS/ckpt", "group searches by kind (wall)");
  std::printf("%-10s %9.1f %9.1f %10.2f %10.2f %11s %10s   %s\n", "forward", fwd.wall, fwd.cpu, 1.0, 1.0, "", "",
              fwd.note.c_str());
  for (const Row& r : rows) {
    std::printf("%-10s %9.1f %9.1f %10.2f %10.2f %11s %10.2f   %s\n", r.what.c_str(), r.wall, r.cpu, r.wall / fwd.wall,
                r.cpu / fwd.cpu, pc::HumanBytes(r.peak).c_str(), r.peak / ckpt_bytes, r.note.c_str());
  }
  // CPU time is what the shared machine measures reliably; extrapolate the forward to Pythia-160M's
  // 12 layers (the methods' cost is per block: the engine's embedding is a negligible part).
  const double per_block = blocks_cpu / static_cast<double>(layers);
  const double fwd12 = embed_cpu + 12.0 * per_block + head_cpu;
  std::printf("\nforward CPU s by part: embedding %.2f, %lld blocks %.2f (%.2f per block), head %.2f\n", embed_cpu,
              (long long)layers, blocks_cpu, per_block, head_cpu);
  std::printf("%-10s %14s %16s %18s\n", "method", "cpu s / block", "/ block forward", "/ 12-layer forward");
  for (const Row& r : rows) {
    const double m_block = r.cpu / static_cast<double>(layers);
    std::printf("%-10s %14.2f %16.2f %18.2f\n", r.what.c_str(), m_block, m_block / per_block, 12.0 * m_block / fwd12);
  }
  return 0;
}
