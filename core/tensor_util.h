// core/tensor_util.h — small tensor helpers: dtypes by name, the compute dtype of bf16 weights,
// shape strings, finiteness checks.
#pragma once

#include <ATen/ATen.h>

#include <string>

namespace pc {

// "f32" | "float32" | "fp32", "bf16" | "bfloat16", "f16" | "float16" | "fp16"; errors list them.
at::ScalarType ParseDType(const std::string& name, const std::string& what = "--dtype");
std::string DTypeName(at::ScalarType t);  // "f32", "bf16", "f16"
std::string ShapeString(at::IntArrayRef shape);  // "[4, 64]"
// Index of the first non-finite element, or -1.
int64_t FirstNonFinite(const at::Tensor& t);
// How weights stored in bf16 are computed with (docs/PERFORMANCE.md "bf16 on CPUs without bf16
// arithmetic"). kAuto: in bf16 where bf16 GEMMs are faster than f32 ones (HostCpu().FastBf16(),
// AMX), else in f32 with the weights kept in bf16 in memory; kNative: always in bf16; kF32: always
// in f32.
enum class Bf16Compute { kAuto, kNative, kF32 };
// The policy: what SetBf16Compute set, else the environment variable PERPCOMP_BF16_COMPUTE
// (auto | native | f32; anything else is an error naming it), else kAuto.
Bf16Compute GetBf16Compute();
void SetBf16Compute(Bf16Compute policy);
void ResetBf16Compute();  // back to the environment variable (tests)
// The dtype arithmetic runs in for weights stored in `storage`: `storage` itself, except bf16 → f32
// where the policy says so. The first fallback in a process is logged once (log::Info).
at::ScalarType ComputeDType(at::ScalarType storage);

// XᵀX (in, in) float32 of the rows of x (n, in) float32: one triangle by the BLAS's ssyrk (half
// the products of at::mm), mirrored; at::mm where the BLAS has no ssyrk or n·in is beyond int.
at::Tensor Gram(const at::Tensor& x);

// Σ XᵀX over batches of rows in float64, as adding each batch's Gram(x) in float64 would give, entry
// for entry: each batch's product goes into one float32 buffer reused across batches (ssyrk's one
// triangle, else at::mm), and only its lower triangle is added to the sum; Finish() mirrors the sum
// once. Two passes over a triangle per batch instead of six over the square.
class GramAccumulator {
 public:
  void Add(const at::Tensor& x);  // x (n, in) float32; `in` the same in every batch
  bool empty() const { return !sum_.defined(); }
  at::Tensor Finish();  // (in, in) float64, symmetric; the accumulator is empty again

 private:
  at::Tensor sum_;      // (in, in) float64, its lower triangle (j <= i) valid
  at::Tensor scratch_;  // (in, in) float32
};

// Relative max difference max|a−b| / max(max|b|, tiny), in float64.
double MaxRelDiff(const at::Tensor& a, const at::Tensor& b);

}  // namespace pc
