// bench/metrics/measure_bench.cc — the cost of `perpcomp measure` (metrics/measure.h) against the
// forward passes it needs: a Pythia-160M-shaped random model and a 4-bit fake-quantized copy on
// W windows of T tokens. Prints a table; see docs/PERFORMANCE.md ("measure").
//
//   build/bench/metrics/measure_bench [--windows 4] [--seq 512] [--hidden 768] [--layers 12]
//                                     [--heads 12] [--vocab 50304] [--threads N] [--reps 3] [--dir TMP]
// Each time is the minimum over --reps runs, as wall time and as CPU time of the process. On a
// shared machine compare CPU times at --threads 1 (the default): wall time then depends on the
// other processes, and OpenMP threads spin while they wait for a core.
#include <ATen/ATen.h>

#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <unistd.h>

#include "bench/model/bench_util.h"
#include "core/blas.h"
#include "core/fs.h"
#include "core/strings.h"
#include "core/threads.h"
#include "metrics/measure.h"
#include "metrics/perplexity.h"

namespace {

struct Cost {
  double wall = 1e300, cpu = 1e300;  // seconds; cpu: all threads of this process
};

double CpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Minimum wall and CPU time over `reps` runs; `before` runs untimed before each.
Cost MinCost(int reps, const std::function<void()>& fn, const std::function<void()>& before = nullptr) {
  Cost best;
  for (int i = 0; i < reps; ++i) {
    if (before) before();
    const double c0 = CpuSeconds();
    auto a = std::chrono::steady_clock::now();
    fn();
    best.wall = std::min(best.wall, std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
    best.cpu = std::min(best.cpu, CpuSeconds() - c0);
  }
  return best;
}

// Symmetric 4-bit round-to-nearest, groups of 128 inputs, every block linear.
void FakeQuantize(pc::Model& m) {
  for (pc::Linear* l : m.Linears(false)) {
    at::Tensor w = l->weight;
    for (int64_t g0 = 0; g0 < w.size(1); g0 += 128) {
      at::Tensor g = w.narrow(1, g0, std::min<int64_t>(128, w.size(1) - g0));
      at::Tensor s = g.abs().amax(1, true).clamp_min(1e-12) / 7.0;
      g.copy_((g / s).round().clamp(-8, 7) * s);
    }
  }
}

int64_t DirBytes(const std::string& dir) {
  int64_t total = 0;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec)) total += static_cast<int64_t>(it->file_size(ec));
  }
  return total;
}

}  // namespace

int main(int argc, char** argv) {
  pc::SelectBlasKernels(argv);  // the kernels perpcomp itself runs (core/blas.h)
  int64_t W = 4, T = 512, hidden = 768, layers = 12, heads = 12, vocab = 50304;
  int threads = 1, reps = 2;
  std::string base = "/tmp";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--windows") W = std::atoll(argv[i + 1]);
    if (a == "--seq") T = std::atoll(argv[i + 1]);
    if (a == "--hidden") hidden = std::atoll(argv[i + 1]);
    if (a == "--layers") layers = std::atoll(argv[i + 1]);
    if (a == "--heads") heads = std::atoll(argv[i + 1]);
    if (a == "--vocab") vocab = std::atoll(argv[i + 1]);
    if (a == "--threads") threads = std::atoi(argv[i + 1]);
    if (a == "--dir") base = argv[i + 1];
    if (a == "--reps") reps = std::atoi(argv[i + 1]);
  }
  pc::SetThreads(threads);
  const std::string dir = pc::fs::Join(base, "measure-bench-" + std::to_string(::getpid()));
  const std::string ref_dir = dir + "/reference", cache = dir + "/cache";
  pc::bench::WriteRandomPythia(ref_dir, hidden, layers, heads, vocab);
  auto ref = pc::Model::Load(ref_dir);
  auto comp = pc::Model::Load(ref_dir);
  FakeQuantize(*comp);
  at::Tensor windows = at::randint(0, vocab, {W, T}, at::detail::createCPUGenerator(1), at::kLong);
  const int64_t batch = pc::DefaultEvalBatch(*ref, T);
  std::printf("measure: Pythia-shaped random gpt_neox (hidden %lld, %lld layers, vocab %lld) vs its 4-bit g128 "
              "fake-quantized copy, %lld x %lld tokens, batch %lld windows, %d threads\n\n",
              (long long)hidden, (long long)layers, (long long)vocab, (long long)W, (long long)T, (long long)batch,
              pc::GetThreads());

  at::NoGradGuard no_grad;
  auto forward = [&] {
    for (int64_t w0 = 0; w0 < W; w0 += batch) ref->Forward(windows.narrow(0, w0, std::min(batch, W - w0)));
  };
  forward();  // warm-up
  const Cost fwd = MinCost(reps, forward);

  struct Row {
    const char* what;
    Cost cost;
    double rss;
  };
  std::vector<Row> rows;
  // `clear`: remove this folder before each run (the entries; the model-hash memo stays, as it
  // does for a user measuring a second compressed model).
  auto run = [&](const char* what, const std::string& clear_dir, bool per_token, bool clear) {
    const std::string cache_dir = clear ? pc::fs::Parent(clear_dir) : clear_dir;
    pc::MeasureOptions o;
    o.cache.dir = cache_dir;
    o.per_token = per_token;
    pc::bench::ResetPeakRss();
    Cost t = MinCost(
        reps, [&] { pc::Measure(*ref, *comp, windows, o); },
        [&] {
          if (clear) pc::fs::RemoveAll(clear_dir);
        });
    rows.push_back({what, t, pc::bench::PeakRssBytes()});
  };
  run("no cache (reference live)", "", false, false);
  run("cache miss (live + write)", pc::fs::Join(cache, "reference"), false, true);
  run("cache hit", cache, false, false);
  run("cache hit + --per-token", cache, true, false);
  run("no cache + --per-token", "", true, false);

  std::printf("%-30s %9s %9s %11s %13s %10s\n", "run", "wall s", "CPU s", "CPU / fwd", "CPU / 3 fwd",
              "peak RSS");
  std::printf("%-30s %9.2f %9.2f %11.2f %13.2f %10s\n", "one forward (reference)", fwd.wall, fwd.cpu, 1.0, 1.0 / 3,
              "-");
  for (const Row& r : rows) {
    std::printf("%-30s %9.2f %9.2f %11.2f %13.2f %10s\n", r.what, r.cost.wall, r.cost.cpu, r.cost.cpu / fwd.cpu,
                r.cost.cpu / (3 * fwd.cpu), pc::HumanBytes(r.rss).c_str());
  }
  std::printf("\nreference cache on disk: %s (%s per token)\n", pc::HumanBytes(double(DirBytes(cache))).c_str(),
              pc::HumanBytes(double(DirBytes(cache)) / double(W * T)).c_str());
  std::printf("per-token memory kept: %s without, %s with --per-token\n",
              pc::HumanBytes(double(pc::MeasureMemoryBytes(*ref, W * T, false))).c_str(),
              pc::HumanBytes(double(pc::MeasureMemoryBytes(*ref, W * T, true))).c_str());
  pc::fs::RemoveAll(dir);
  return 0;
}
