// bench/compress/gram_bench.cc — the sum of XᵀX over calibration micro-batches that GPTQ and SparseGPT
// need (compress/engine.cc, kStatGram), two ways on the same random batches: each batch's Gram(x)
// (ssyrk, mirrored) converted to float64 and added, as the engine did before GramAccumulator, and
// GramAccumulator (the triangle added, mirrored once). Prints a table; see docs/PERFORMANCE.md.
//
//   build/bench/compress/gram_bench [--features 576,1536] [--rows 1024] [--batches 16] [--reps 3]
//                                   [--threads N]
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/cpu_model.h"
#include "bench/model/bench_util.h"
#include "core/blas.h"
#include "core/strings.h"
#include "core/tensor_util.h"
#include "core/threads.h"

int main(int argc, char** argv) {
  pc::SelectBlasKernels(argv);  // the kernels perpcomp itself runs (core/blas.h)
  std::string features = "576,1536";
  int64_t rows = 1024, batches = 16;
  int reps = 3, threads = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--features")) features = argv[i + 1];
    if (!std::strcmp(argv[i], "--rows")) rows = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--batches")) batches = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
  }
  pc::SetThreads(threads);
  pc::bench::PrintCpu();
  std::printf("%lld batches of %lld rows, median of %d runs, %d threads\n\n", static_cast<long long>(batches),
              static_cast<long long>(rows), reps, at::get_num_threads());
  std::printf("%-9s %-28s %10s %10s %8s\n", "features", "way", "ms", "GFLOP/s", "equal");
  for (const std::string& f : pc::Split(features, ',')) {
    const int64_t in = std::atoll(f.c_str());
    at::manual_seed(0);
    std::vector<at::Tensor> xs;  // (rows, in) float32 each
    for (int64_t b = 0; b < batches; ++b) xs.push_back(at::randn({rows, in}));
    at::Tensor per_batch, accumulated;
    const double t_old = pc::bench::TimeIt(
        [&] {
          at::Tensor sum;
          for (const at::Tensor& x : xs) {
            at::Tensor g = pc::Gram(x).to(at::kDouble);
            if (sum.defined()) sum.add_(g); else sum = g;
          }
          per_batch = sum;
        },
        reps);
    const double t_new = pc::bench::TimeIt(
        [&] {
          pc::GramAccumulator acc;
          for (const at::Tensor& x : xs) acc.Add(x);
          accumulated = acc.Finish();
        },
        reps);
    const double flop = static_cast<double>(in) * in * rows * batches;  // ssyrk: n²·k multiply-adds over two
    const bool equal = per_batch.equal(accumulated);
    std::printf("%-9lld %-28s %10.1f %10.1f %8s\n", static_cast<long long>(in), "Gram + float64 add per batch",
                1e3 * t_old, flop / t_old * 1e-9, "");
    std::printf("%-9lld %-28s %10.1f %10.1f %8s\n", static_cast<long long>(in), "GramAccumulator", 1e3 * t_new,
                flop / t_new * 1e-9, equal ? "yes" : "NO");
  }
  std::printf("\nGFLOP/s: n²·rows·batches over the time (the triangle's multiply-adds, counted twice).\n");
  return 0;
}
