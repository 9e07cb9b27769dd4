#include "core/tensor_util.h"

#include "core/error.h"

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

double MaxRelDiff(const at::Tensor& a, const at::Tensor& b) {
  at::Tensor ad = a.to(at::kDouble), bd = b.to(at::kDouble);
  double denom = std::max(bd.abs().max().item<double>(), 1e-30);
  return (ad - bd).abs().max().item<double>() / denom;
}

}  // namespace pc
