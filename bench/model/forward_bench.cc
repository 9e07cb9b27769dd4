// bench/model/forward_bench.cc — the eval forward of a Pythia-160M-shaped random model next to
// the same GEMMs timed alone (fp32 and bf16). Prints a table; see docs/PERFORMANCE.md.
//
//   build/bench/model/forward_bench [--batch B] [--seq T] [--threads N] [--reps R]
#include <ATen/ATen.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "bench/model/bench_util.h"
#include "core/threads.h"
#include "core/tensor_util.h"

namespace {

struct Gemm {
  const char* what;
  int64_t m, n, k, batch, count;  // count: times the forward performs it
};

}  // namespace

int main(int argc, char** argv) {
  int64_t B = 1, T = 512, reps = 3;
  int threads = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--batch")) B = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--seq")) T = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--reps")) reps = std::atoll(argv[i + 1]);
  }
  pc::SetThreads(threads);
  const int64_t d = 768, L = 12, H = 12, V = 50304, I = 3072, hd = d / H, N = B * T;
  std::printf("Pythia-160M-shaped random gpt_neox (hidden %lld, %lld layers, %lld heads, vocab %lld), batch %lld x seq %lld, %d threads\n\n",
              (long long)d, (long long)L, (long long)H, (long long)V, (long long)B, (long long)T, pc::GetThreads());
  const Gemm gemms[] = {
      {"qkv      (N,768)x(768,2304)", N, 3 * d, d, 1, L},
      {"dense    (N,768)x(768,768)", N, d, d, 1, L},
      {"h_to_4h  (N,768)x(768,3072)", N, I, d, 1, L},
      {"4h_to_h  (N,3072)x(3072,768)", N, d, I, 1, L},
      {"head     (N,768)x(768,50304)", N, V, d, 1, 1},
      {"scores   BH x (T,64)x(64,T)", T, T, hd, B * H, L},
      {"context  BH x (T,T)x(T,64)", T, hd, T, B * H, L},
  };
  std::printf("%-8s %-32s %10s %10s\n", "dtype", "GEMM", "ms total", "GFLOP/s");
  for (at::ScalarType dt : {at::kFloat, at::kBFloat16}) {
    at::NoGradGuard ng;
    double gemm_time = 0, gemm_flops = 0;
    for (const Gemm& g : gemms) {
      at::Tensor a = at::randn({g.batch, g.m, g.k}).to(dt), b = at::randn({g.batch, g.n, g.k}).to(dt);
      at::Tensor a2 = a.squeeze(0), b2 = b.squeeze(0);
      double t = pc::bench::TimeIt([&] {
        if (g.batch == 1) at::linear(a2, b2); else at::matmul(a, b.transpose(1, 2));
      }, static_cast<int>(reps));
      double flops = 2.0 * g.m * g.n * g.k * g.batch;
      gemm_time += t * g.count;
      gemm_flops += flops * g.count;
      std::printf("%-8s %-32s %10.2f %10.1f\n", pc::DTypeName(dt).c_str(), g.what, 1e3 * t * g.count, flops / t / 1e9);
    }
    auto model = pc::bench::RandomPythia(d, L, H, V, dt);
    at::Tensor tokens = at::randint(0, V, {B, T}, at::kLong);
    double fwd = pc::bench::TimeIt([&] { model->Forward(tokens); }, static_cast<int>(reps));
    std::printf("%-8s %-32s %10.2f %10.1f\n", pc::DTypeName(dt).c_str(), "sum of the GEMMs alone", 1e3 * gemm_time,
                gemm_flops / gemm_time / 1e9);
    std::printf("%-8s %-32s %10.2f %10.1f   %.0f tokens/s, GEMM share %.0f%% (target >= 80%% in f32)\n\n",
                pc::DTypeName(dt).c_str(), "eval forward", 1e3 * fwd, gemm_flops / fwd / 1e9, N / fwd,
                100.0 * gemm_time / fwd);
  }
  return 0;
}
