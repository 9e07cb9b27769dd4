// model/folded_scales.h — the scales a block transform (AWQ) folded into a compressed model's
// weights on purpose, so that comparisons with the reference can carry the reference through the
// same scales instead of counting them as compression error (docs/METRICS.md "Folded scales").
//
// For one linear with weight Ŵ (out, in) in the compressed model and W in the reference, the
// reference carried through the fold is diag(output) · W · diag(input): `input` (in,) is the s its
// input columns were multiplied by (their input arrives divided by s), `output` (out,) the factor
// its output rows were multiplied by (1/s on the rows that feed a scaled linear, 1 elsewhere).
// `activation` holds, per AWQ activation-scales tensor (`…mlp.act.scales`), the s that a saved
// Hugging Face folder folded into the next linear's input columns instead of keeping the tensor
// (the awq-gemm exporter puts it back).
//
// Saved beside a compressed folder's weights as <folder>/folded_scales/model.safetensors
// (float32; tensor names "<linear>.input", "<linear>.output", "<act scales name>"), a subfolder
// that transformers and every Hugging Face loader ignore.
#pragma once

#include <ATen/ATen.h>

#include <map>
#include <string>

namespace pc {

struct FoldedScales {
  std::map<std::string, at::Tensor> input, output;  // HF module name -> (in,) / (out,) float32
  std::map<std::string, at::Tensor> activation;     // act-scales tensor name -> (intermediate,) float32

  bool empty() const { return input.empty() && output.empty() && activation.empty(); }
  const at::Tensor* Input(const std::string& linear) const;   // nullptr: 1
  const at::Tensor* Output(const std::string& linear) const;  // nullptr: 1
  // diag(output) · w · diag(input) for the linear `name`, w (out, in) in float64; w itself when
  // neither is recorded.
  at::Tensor Carry(const std::string& name, const at::Tensor& w) const;
};

constexpr const char* kFoldedScalesDir = "folded_scales";

// Reads <dir>/folded_scales/ (an empty record when the folder has none).
FoldedScales ReadFoldedScales(const std::string& dir);
// Writes <dir>/folded_scales/model.safetensors; nothing when `scales` is empty.
void WriteFoldedScales(const std::string& dir, const FoldedScales& scales);

}  // namespace pc
