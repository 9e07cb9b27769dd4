// compress/quantizer.h — group-wise uniform fake quantization (RTN), the quantizer rtn, awq and
// sparsegpt's joint quantization share; gptq computes its parameters with GPTQ's own rule
// (ComputeGptqQuantParams) and applies them with FakeQuantizeWith.
//
// Semantics of llm-awq's pseudo_quantize_tensor (docs/AWQ.md). Groups run along the input
// dimension; a trailing partial group gets its own scale and zero point; when in_features <
// group_size, or group_size = -1, the whole row is one group (docs/PRUNING.md).
//   asymmetric: scale = max(max−min, 1e-5) / (2^b − 1), zero = clamp(−round(min/scale), 0, 2^b − 1),
//               ŵ = (clamp(round(w/scale) + zero, 0, 2^b − 1) − zero) · scale
//   symmetric:  scale = max(max|w|, 1e-5) / (2^(b−1) − 1), ŵ = clamp(round(w/scale), −2^(b−1), 2^(b−1) − 1) · scale
// Rounding is round-half-to-even (torch.round).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <string>

namespace pc {

struct QuantSpec {
  int bits = 4;
  int64_t group_size = 128;  // -1: per output channel (one group per row)
  bool zero_point = true;    // asymmetric with a zero point; false: symmetric

  void Validate(const std::string& where) const;  // bits in [2, 8], group_size -1 or >= 1
  std::string Describe() const;                   // "w4 g128 asym"
  // Group length for a row of `in` elements.
  int64_t GroupLength(int64_t in) const { return group_size <= 0 || group_size >= in ? in : group_size; }
  int64_t Groups(int64_t in) const { int64_t g = GroupLength(in); return (in + g - 1) / g; }
};

// Per-group parameters of a (out, in) weight: scale (out, groups) float32, zero (out, groups)
// float32 holding integers (0 for symmetric).
struct QuantParams {
  at::Tensor scale;
  at::Tensor zero;
};

QuantParams ComputeQuantParams(const at::Tensor& w, const QuantSpec& spec);
// GPTQ's quantizer (IST-DASLab/gptq quant.py `find_params`, weight=True, perchannel, mse off), per
// group of w (out, in) in float32: the range always includes 0,
//   xmin = min(min w, 0), xmax = max(max w, 0); symmetric: xmax = max(|xmin|, xmax), xmin = −xmax
//   when xmin < 0; xmin = xmax = 0 becomes −1, +1;
//   scale = (xmax − xmin) / (2^b − 1), zero = round(−xmin / scale) (symmetric: 2^(b−1)).
// Codes are unsigned in both modes: apply with FakeQuantizeWith and a zero_point spec.
QuantParams ComputeGptqQuantParams(const at::Tensor& w, const QuantSpec& spec);
// Fake-quantizes w (out, in) with its own group parameters; returns a new tensor of w's dtype.
at::Tensor FakeQuantize(const at::Tensor& w, const QuantSpec& spec);
// With given parameters (GPTQ quantizes column by column with fixed group parameters).
at::Tensor FakeQuantizeWith(const at::Tensor& w, const QuantParams& params, const QuantSpec& spec);
// FakeQuantizeWith for one weight column: w, scale, zero and out (n,) float32, one (scale, zero)
// pair per row; the same float operations in the same order as the tensor version (so the same
// results), without its per-call tensor work: GPTQ's walk calls it once per input column.
void FakeQuantizeColumn(const float* w, const float* scale, const float* zero, int64_t n, const QuantSpec& spec,
                        float* out);
// Integer codes (out, in) int32 in [0, 2^b − 1] (asymmetric) for export.
at::Tensor QuantCodes(const at::Tensor& w, const QuantParams& params, const QuantSpec& spec);

// Scalar reference (loops, double-free float32 math as the tensor version): the oracle for tests.
at::Tensor FakeQuantizeReference(const at::Tensor& w, const QuantSpec& spec);

}  // namespace pc
