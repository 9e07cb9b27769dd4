#include "core/tensor_util.h"

#include <ATen/Parallel.h>

#include <atomic>
#include <climits>
#include <cstdlib>
#include <mutex>

#include "core/blas.h"
#include "core/cpu_features.h"
#include "core/error.h"
#include "core/log.h"

namespace pc {

at::ScalarType ParseDType(const std::string& name, const std::string& what) {
  if (name == "f32" || name == "float32" || name == "fp32" || name == "float") return at::kFloat;
  if (name == "bf16" || name == "bfloat16") return at::kBFloat16;
  if (name == "f16" || name == "float16" || name == "fp16" || name == "half") return at::kHalf;
  PC_THROW(what, ": unknown dtype '", name, "' (supported: f32, bf16, f16)");
}

std::string DTypeName(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return "f32";
    case at::kBFloat16: return "bf16";
    case at::kHalf: return "f16";
    case at::kDouble: return "f64";
    default: return std::string(c10::toString(t));
  }
}

namespace {
// -1: not set (read the environment); otherwise a Bf16Compute.
std::atomic<int> g_bf16_compute{-1};
}  // namespace

Bf16Compute GetBf16Compute() {
  const int set = g_bf16_compute.load();
  if (set >= 0) return static_cast<Bf16Compute>(set);
  const char* env = std::getenv("PERPCOMP_BF16_COMPUTE");
  if (env == nullptr || *env == 0) return Bf16Compute::kAuto;
  const std::string v = env;
  if (v == "auto") return Bf16Compute::kAuto;
  if (v == "native") return Bf16Compute::kNative;
  if (v == "f32") return Bf16Compute::kF32;
  PC_THROW("environment variable PERPCOMP_BF16_COMPUTE='", v, "': expected auto, native or f32");
}

void SetBf16Compute(Bf16Compute policy) { g_bf16_compute = static_cast<int>(policy); }
void ResetBf16Compute() { g_bf16_compute = -1; }

at::ScalarType ComputeDType(at::ScalarType storage) {
  if (storage != at::kBFloat16) return storage;
  const Bf16Compute policy = GetBf16Compute();
  const bool f32 = policy == Bf16Compute::kF32 || (policy == Bf16Compute::kAuto && !HostCpu().FastBf16());
  if (!f32) return storage;
  static std::once_flag said;
  std::call_once(said, [policy] {
    if (policy == Bf16Compute::kF32) {
      log::Info("dtype", "bf16 weights are computed in f32 (PERPCOMP_BF16_COMPUTE=f32); they stay bf16 in memory");
    } else if (HostCpu().NativeBf16()) {
      log::Info("dtype", "this CPU (", HostCpu().model, ") has AVX512-BF16 but no AMX-BF16, where bf16 GEMMs are ",
                "slower than f32 ones: bf16 weights stay bf16 in memory and are computed in f32 ",
                "(PERPCOMP_BF16_COMPUTE=native forces bf16 arithmetic)");
    } else {
      log::Info("dtype", "this CPU (", HostCpu().model, ") has no native bf16 arithmetic (AVX512-BF16 or AMX-BF16): ",
                "bf16 weights stay bf16 in memory and are computed in f32 (PERPCOMP_BF16_COMPUTE=native forces bf16 ",
                "arithmetic, about 40x slower here)");
    }
  });
  return at::kFloat;
}

std::string ShapeString(at::IntArrayRef shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

int64_t FirstNonFinite(const at::Tensor& t) {
  if (!t.defined() || t.numel() == 0 || !at::isFloatingType(t.scalar_type())) return -1;
  // In pieces, so the boolean temporaries stay small for an embedding-sized tensor.
  constexpr int64_t kPiece = 1 << 22;
  const at::Tensor flat = t.reshape({-1});
  for (int64_t pos = 0; pos < flat.numel(); pos += kPiece) {
    at::Tensor bad = at::logical_not(at::isfinite(flat.narrow(0, pos, std::min(kPiece, flat.numel() - pos))));
    if (bad.any().item<bool>()) return pos + bad.nonzero().index({0, 0}).item<int64_t>();
  }
  return -1;
}

namespace {

// The lower triangle (row-major, j <= i) of XᵀX into c (in, in) float32, contiguous: by ssyrk, whose
// column-major upper triangle is the row-major lower one (the other triangle is left as it was), or
// the whole product by at::mm where the BLAS has no ssyrk or n·in is beyond int.
void GramLowerInto(const at::Tensor& x, at::Tensor& c) {
  PC_ASSERT(x.dim() == 2 && x.scalar_type() == at::kFloat, "Gram of ", ShapeString(x.sizes()), " ", DTypeName(x.scalar_type()));
  const SsyrkFn ssyrk = BlasSsyrk();
  const int64_t rows = x.size(0), in = x.size(1);
  if (ssyrk == nullptr || rows * in > INT_MAX || rows == 0) {
    at::mm_out(c, x.t(), x);
    return;
  }
  at::Tensor a = x.contiguous();  // row-major (rows, in) = column-major (in, rows): A with XᵀX = A·Aᵀ
  const int n = static_cast<int>(in), k = static_cast<int>(rows);
  const float alpha = 1.0f, beta = 0.0f;
  ssyrk("U", "N", &n, &k, &alpha, a.data_ptr<float>(), &n, &beta, c.data_ptr<float>(), &n);
}

}  // namespace

at::Tensor Gram(const at::Tensor& x) {
  const int64_t in = x.size(-1);
  at::Tensor c = at::zeros({in, in}, x.options());
  GramLowerInto(x, c);
  return c.tril().add_(c.tril(-1).t());
}

void GramAccumulator::Add(const at::Tensor& x) {
  const int64_t in = x.size(-1);
  if (sum_.defined()) {
    PC_ASSERT(sum_.size(0) == in, "GramAccumulator: ", in, " features after ", sum_.size(0));
  } else {
    sum_ = at::zeros({in, in}, at::kDouble);
  }
  if (!scratch_.defined() || scratch_.size(0) != in) scratch_ = at::empty({in, in}, at::kFloat);
  GramLowerInto(x, scratch_);
  const float* c = scratch_.data_ptr<float>();
  double* s = sum_.data_ptr<double>();
  at::parallel_for(0, in, 64, [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i) {
      for (int64_t j = 0; j <= i; ++j) s[i * in + j] += static_cast<double>(c[i * in + j]);
    }
  });
}

at::Tensor GramAccumulator::Finish() {
  PC_ASSERT(sum_.defined(), "GramAccumulator::Finish without a batch");
  at::Tensor out = std::move(sum_);
  sum_ = at::Tensor();
  scratch_ = at::Tensor();
  const int64_t in = out.size(0);
  double* s = out.data_ptr<double>();
  for (int64_t i = 0; i < in; ++i) {
    for (int64_t j = 0; j < i; ++j) s[j * in + i] = s[i * in + j];
  }
  return out;
}

double MaxRelDiff(const at::Tensor& a, const at::Tensor& b) {
  at::Tensor ad = a.to(at::kDouble), bd = b.to(at::kDouble);
  double denom = std::max(bd.abs().max().item<double>(), 1e-30);
  return (ad - bd).abs().max().item<double>() / denom;
}

}  // namespace pc
