// bench/model/forward_bench.cc — the eval forward of a Pythia-160M-shaped random model next to
// the same GEMMs timed alone (fp32 and bf16), and with bf16 weights computed in bf16 and in f32.
// Prints a table headed by the CPU and its flags; see docs/PERFORMANCE.md.
//
//   build/bench/model/forward_bench [--batch B] [--seq T] [--threads N] [--reps R]
#include <ATen/ATen.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "bench/cpu_model.h"
#include "bench/model/bench_util.h"
#include "core/cpu_features.h"
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
  pc::bench::PrintCpu();
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
  const bool native = pc::HostCpu().NativeBf16();
  // Without native bf16 arithmetic a bf16 GEMM is emulated (about 40x slower): one repetition.
  auto reps_for = [&](at::ScalarType arithmetic) {
    return static_cast<int>(arithmetic == at::kBFloat16 && !native ? 1 : reps);
  };
  std::printf("%-8s %-32s %10s %10s\n", "dtype", "GEMM", "ms total", "GFLOP/s");
  double gemm_flops = 0, gemm_time[2] = {0, 0};
  for (int di = 0; di < 2; ++di) {
    const at::ScalarType dt = di == 0 ? at::kFloat : at::kBFloat16;
    at::NoGradGuard ng;
    gemm_flops = 0;
    for (const Gemm& g : gemms) {
      at::Tensor a = at::randn({g.batch, g.m, g.k}).to(dt), b = at::randn({g.batch, g.n, g.k}).to(dt);
      at::Tensor a2 = a.squeeze(0), b2 = b.squeeze(0);
      double t = pc::bench::TimeIt([&] {
        if (g.batch == 1) at::linear(a2, b2); else at::matmul(a, b.transpose(1, 2));
      }, reps_for(dt));
      double flops = 2.0 * g.m * g.n * g.k * g.batch;
      gemm_time[di] += t * g.count;
      gemm_flops += flops * g.count;
      std::printf("%-8s %-32s %10.2f %10.1f\n", pc::DTypeName(dt).c_str(), g.what, 1e3 * t * g.count, flops / t / 1e9);
    }
    std::printf("%-8s %-32s %10.2f %10.1f\n\n", pc::DTypeName(dt).c_str(), "sum of the GEMMs alone", 1e3 * gemm_time[di],
                gemm_flops / gemm_time[di] / 1e9);
  }
  // The eval forward: f32 weights; bf16 weights computed in bf16; bf16 weights computed in f32
  // (what --dtype bf16 does by default where bf16 is not native: core/tensor_util.h ComputeDType).
  struct Row {
    const char* what;
    at::ScalarType weights;
    pc::Bf16Compute policy;
  };
  const Row rows[] = {{"f32 weights, f32 arithmetic", at::kFloat, pc::Bf16Compute::kAuto},
                      {"bf16 weights, bf16 arithmetic", at::kBFloat16, pc::Bf16Compute::kNative},
                      {"bf16 weights, f32 arithmetic", at::kBFloat16, pc::Bf16Compute::kF32}};
  std::printf("%-32s %-8s %10s %10s %10s %8s\n", "eval forward", "compute", "ms", "GFLOP/s", "tokens/s", "GEMM %");
  for (const Row& r : rows) {
    at::NoGradGuard ng;
    pc::SetBf16Compute(r.policy);
    auto model = pc::bench::RandomPythia(d, L, H, V, r.weights);
    const at::ScalarType arithmetic = model->compute_dtype();
    at::Tensor tokens = at::randint(0, V, {B, T}, at::kLong);
    double fwd = pc::bench::TimeIt([&] { model->Forward(tokens); }, reps_for(arithmetic));
    std::printf("%-32s %-8s %10.2f %10.1f %10.0f %7.0f%%\n", r.what, pc::DTypeName(arithmetic).c_str(), 1e3 * fwd,
                gemm_flops / fwd / 1e9, N / fwd, 100.0 * gemm_time[arithmetic == at::kFloat ? 0 : 1] / fwd);
  }
  pc::SetBf16Compute(pc::Bf16Compute::kAuto);
  std::printf("\nGEMM %%: the GEMMs alone in the arithmetic's dtype over the forward (target >= 80%% in f32).\n"
              "--dtype bf16 on this CPU computes in %s (native bf16: %s).\n",
              pc::DTypeName(pc::ComputeDType(at::kBFloat16)).c_str(), native ? "yes" : "no");
  return 0;
}
