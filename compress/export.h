// compress/export.h — packed export formats of a compressed model.
#pragma once

#include <string>

#include "compress/engine.h"
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

}  // namespace pc
