// bench/model/forward_bench.cc — the eval forward of a model next to the same GEMMs timed alone
// (fp32 and bf16), and with bf16 weights computed in bf16 and in f32. The model is a
// Pythia-160M-shaped random gpt_neox, or a Hugging Face folder (--model DIR, e.g. SmolLM2-135M);
// the GEMMs are its block linears, its head and its attention products, from its own shapes.
// Prints a table headed by the CPU and its flags; see docs/PERFORMANCE.md.
//
//   build/bench/model/forward_bench [--model DIR] [--batch B] [--seq T] [--threads N] [--reps R]
//                                   [--dtypes f32,bf16] [--attention-chunk-bytes BYTES]
//                                   [--gemms no]  (the eval forward only; its GEMM % column is then 0)
#include <ATen/ATen.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/cpu_model.h"
#include "bench/model/bench_util.h"
#include "core/blas.h"
#include "core/cpu_features.h"
#include "core/threads.h"
#include "core/tensor_util.h"
#include "model/attention.h"

namespace {

struct Gemm {
  std::string what;
  int64_t m, n, k, batch, count;  // count: times the forward performs it
};

// The GEMMs of one forward of `model` on B windows of T tokens: each block linear (one per layer),
// the head, and attention's scores and context per head.
std::vector<Gemm> ForwardGemms(const pc::Model& model, int64_t B, int64_t T) {
  const pc::ModelConfig& c = model.config();
  const int64_t N = B * T, L = model.num_layers();
  std::vector<Gemm> out;
  auto shape = [](const std::string& name, int64_t m, int64_t k, int64_t n) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%-10s (%lld,%lld)x(%lld,%lld)", name.c_str(), (long long)m, (long long)k,
                  (long long)k, (long long)n);
    return std::string(buf);
  };
  for (const pc::Linear& l : model.block(0).linears) {
    const std::string short_name = l.name.substr(l.name.rfind('.') + 1);
    out.push_back({shape(short_name, N, l.in_features(), l.out_features()), N, l.out_features(), l.in_features(), 1, L});
  }
  out.push_back({shape("head", N, c.hidden, c.vocab_size), N, c.vocab_size, c.hidden, 1, 1});
  char buf[160];
  std::snprintf(buf, sizeof buf, "scores     BH x (T,%lld)x(%lld,T)", (long long)c.head_dim, (long long)c.head_dim);
  out.push_back({buf, T, T, c.head_dim, B * c.heads, L});
  std::snprintf(buf, sizeof buf, "context    BH x (T,T)x(T,%lld)", (long long)c.head_dim);
  out.push_back({buf, T, c.head_dim, T, B * c.heads, L});
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  pc::SelectBlasKernels(argv);  // the kernels perpcomp itself runs (core/blas.h)
  int64_t B = 1, T = 512, reps = 3;
  int threads = 0;
  std::string model_dir, dtypes = "f32,bf16";
  bool gemms_alone = true;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--batch")) B = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--seq")) T = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--reps")) reps = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--model")) model_dir = argv[i + 1];
    if (!std::strcmp(argv[i], "--attention-chunk-bytes")) pc::SetAttentionChunkBytes(std::atoll(argv[i + 1]));
    if (!std::strcmp(argv[i], "--dtypes")) dtypes = argv[i + 1];
    if (!std::strcmp(argv[i], "--gemms")) gemms_alone = std::strcmp(argv[i + 1], "no") != 0;
  }
  pc::SetThreads(threads);
  const int64_t d = 768, L = 12, H = 12, V = 50304, N = B * T;
  // The model with weights of `dtype` (its arithmetic follows the bf16 policy set before).
  auto make = [&](at::ScalarType dtype) -> std::unique_ptr<pc::Model> {
    if (model_dir.empty()) return pc::bench::RandomPythia(d, L, H, V, dtype);
    pc::LoadOptions lo;
    lo.dtype = dtype;
    return pc::Model::Load(model_dir, lo);
  };
  pc::bench::PrintCpu();
  std::vector<Gemm> gemms;
  int64_t vocab = V;
  {
    auto probe = make(at::kFloat);
    const pc::ModelConfig& c = probe->config();
    vocab = c.vocab_size;
    std::printf("%s (%s: hidden %lld, %lld layers, %lld/%lld heads, intermediate %lld, vocab %lld), batch %lld x seq %lld, "
                "%d threads\n\n",
                model_dir.empty() ? "Pythia-160M-shaped random model" : model_dir.c_str(), probe->arch().model_type,
                (long long)c.hidden, (long long)probe->num_layers(), (long long)c.heads, (long long)c.kv_heads,
                (long long)c.intermediate, (long long)c.vocab_size, (long long)B, (long long)T, pc::GetThreads());
    gemms = ForwardGemms(*probe, B, T);
  }
  const bool native = pc::HostCpu().NativeBf16();
  // Without native bf16 arithmetic a bf16 GEMM is emulated (about 40x slower): one repetition.
  auto reps_for = [&](at::ScalarType arithmetic) {
    return static_cast<int>(arithmetic == at::kBFloat16 && !native ? 1 : reps);
  };
  std::printf("%-8s %-40s %10s %10s\n", "dtype", "GEMM", "ms total", "GFLOP/s");
  double gemm_flops = 0, gemm_time[2] = {0, 0};
  for (const Gemm& g : gemms) gemm_flops += 2.0 * g.m * g.n * g.k * g.batch * g.count;
  const bool want[2] = {dtypes.find("f32") != std::string::npos, dtypes.find("bf16") != std::string::npos};
  for (int di = 0; di < 2; ++di) {
    if (!want[di] || !gemms_alone) continue;
    const at::ScalarType dt = di == 0 ? at::kFloat : at::kBFloat16;
    at::NoGradGuard ng;
    for (const Gemm& g : gemms) {
      at::Tensor a = at::randn({g.batch, g.m, g.k}).to(dt), b = at::randn({g.batch, g.n, g.k}).to(dt);
      at::Tensor a2 = a.squeeze(0), b2 = b.squeeze(0);
      double t = pc::bench::TimeIt([&] {
        if (g.batch == 1) at::linear(a2, b2); else at::matmul(a, b.transpose(1, 2));
      }, reps_for(dt));
      double flops = 2.0 * g.m * g.n * g.k * g.batch;
      gemm_time[di] += t * g.count;
      std::printf("%-8s %-40s %10.2f %10.1f\n", pc::DTypeName(dt).c_str(), g.what.c_str(), 1e3 * t * g.count,
                  flops / t / 1e9);
    }
    std::printf("%-8s %-40s %10.2f %10.1f\n\n", pc::DTypeName(dt).c_str(), "sum of the GEMMs alone", 1e3 * gemm_time[di],
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
    if (!want[r.weights == at::kFloat ? 0 : 1]) continue;
    at::NoGradGuard ng;
    pc::SetBf16Compute(r.policy);
    auto model = make(r.weights);
    const at::ScalarType arithmetic = model->compute_dtype();
    at::Tensor tokens = at::randint(0, vocab, {B, T}, at::kLong);
    double fwd = pc::bench::TimeIt([&] { model->Forward(tokens); }, reps_for(arithmetic));
    std::printf("%-32s %-8s %10.2f %10.1f %10.0f %7.0f%%\n", r.what, pc::DTypeName(arithmetic).c_str(), 1e3 * fwd,
                gemm_flops / fwd / 1e9, N / fwd, 100.0 * gemm_time[arithmetic == at::kFloat ? 0 : 1] / fwd);
  }
  pc::SetBf16Compute(pc::Bf16Compute::kAuto);
  std::printf("\nGEMM %%: the GEMMs alone in the arithmetic's dtype over the forward (target >= 80%% in f32).\n"
              "--dtype bf16 on this CPU computes in %s (native bf16: %s; AMX-BF16: %s).\n",
              pc::DTypeName(pc::ComputeDType(at::kBFloat16)).c_str(), native ? "yes" : "no",
              pc::HostCpu().FastBf16() ? "yes" : "no");
  return 0;
}
