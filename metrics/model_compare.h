// metrics/model_compare.h — a compressed model against its reference: same architecture and
// shapes (checked, the first difference named), and weight-space error per linear.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/folded_scales.h"
#include "model/model.h"

namespace pc {

// Throws naming the first differing config field (forward-relevant fields of ModelConfig, in
// a fixed order) or tensor (name, presence or shape, in the checkpoint order). AWQ's scaled
// activation tensors (act_scales) may be present in either model and are not compared.
// `ref_name` / `comp_name` name the models in the message ("reference 'DIR'"). Reads the names
// and shapes from the loaded tensors and the checkpoint headers: no block is loaded for it.
void CheckSameArchitecture(Model& ref, Model& comp, const std::string& ref_name, const std::string& comp_name);
// The config part of the check only (no weights needed).
void CheckSameConfig(const ModelConfig& ref, const ModelConfig& comp, const std::string& ref_name,
                     const std::string& comp_name);

struct WeightError {
  std::string name;      // HF module name
  int layer = -1;        // -1 for lm_head
  std::string role;      // "q", ..., "down", "lm_head"
  int64_t numel = 0;
  double rel_fro = 0;    // ‖Ŵ − W'‖_F / ‖W'‖_F in float64 (NaN when ‖W'‖ = 0), W' = W carried
                         // through the folded scales (model/folded_scales.h), W itself without any
  double sparsity = 0;   // fraction of exact zeros in Ŵ
  double ref_sparsity = 0;  // the same for W
};

// Every block linear in forward order, then lm_head. `folded`: the scales the compressed model's
// method folded into its weights (empty: none).
std::vector<WeightError> CompareWeights(Model& ref, Model& comp, const FoldedScales& folded = {});
// The linears of block `layer` (loaded in both models), and lm_head: the pieces of CompareWeights
// for a measurement that holds one block at a time.
std::vector<WeightError> CompareBlockWeights(Model& ref, Model& comp, int layer, const FoldedScales& folded = {});
WeightError CompareHeadWeights(Model& ref, Model& comp, const FoldedScales& folded = {});

}  // namespace pc
