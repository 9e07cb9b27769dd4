// compress/export.h — packed export formats of a compressed model.
#pragma once

#include <string>

#include "compress/engine.h"
#include "model/gguf_format.h"
#include "model/model.h"

namespace pc {

// AutoAWQ's GEMM layout (docs/AWQ.md "--format awq-gemm"): writes a second Hugging Face
// folder `dir` with int32 qweight [in, out/8] (nibble order 0,2,4,6,1,3,5,7), qzeros
// [in/g, out/8], fp16 scales [in/g, out] and config.json's quantization_config. `model` holds
// the fake-quantized weights (as written by compress); `plan` says which linears were
// quantized with which parameters. Linears it cannot represent are refused by name.
void ExportAwqGemm(Model& model, const Plan& plan, const std::string& dir);

// The refusals of ExportAwqGemm (linears not quantized, bits != 4, more than one group size,
// in_features not a multiple of the group size, out_features not a multiple of 8), by name,
// from the plan and the tensor declarations alone: call it before compressing.
void CheckAwqGemm(const Model& model, const Plan& plan);

// llama.cpp's GGUF file of the compressed model (docs/GGUF.md "Writing GGUF"): `model` holds the
// fake-quantized weights (the compressed folder read back). Linears quantized with 4 bits become
// Q4_0 (symmetric) or Q4_1 (with a zero point), with 8 bits symmetric Q8_0; their integer codes and
// scales are recovered exactly from the fake-quantized values per block of 32 (each block lies in
// one quantizer group), d and m rounded to float16. Every other tensor is written as
// `other` (F32, F16, BF16; 1-D tensors F32). Writes `path`.
void ExportGguf(Model& model, const Plan& plan, const std::string& path, GgmlType other);

// The refusals of ExportGguf by linear name, from the plan and the declared shapes: a quantized
// linear with bits other than 4 and 8, 8 bits with a zero point, a group size that is not a multiple
// of 32, in_features not a multiple of 32; AWQ activation scales (no llama.cpp tensor); a quantized
// tied head; an architecture or configuration the GGUF writer refuses. Call it before compressing.
void CheckGguf(const Model& model, const Plan& plan);

}  // namespace pc
