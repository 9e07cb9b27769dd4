// core/tensor_util.h — small tensor helpers: dtypes by name, shape strings, finiteness checks.
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
// Relative max difference max|a−b| / max(max|b|, tiny), in float64.
double MaxRelDiff(const at::Tensor& a, const at::Tensor& b);

}  // namespace pc
