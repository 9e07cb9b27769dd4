// recipes/allocate.h — `perpcomp allocate`: the per-linear choice of candidate settings that
// minimises a predictor's summed damage under an average-bits or average-sparsity budget, read
// from a sensitivity file (pipeline/sensitivity.h), and its outputs: a perpcomp recipe with
// per-linear overrides, an llm-compressor recipe, llama-quantize's --tensor-type arguments
// (docs/ALLOCATION.md). No LibTorch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pc::recipes {

// What a sensitivity file holds (kind "sensitivity", docs/HDF5.md).
struct SensitivityCell {
  double bits = 0, sparsity = 0;  // stored bits per weight; fraction of zero weights
  double iso = 0, par = 0, perp = 0;           // local, relative to Σ‖y‖² at the block output
  double acc_iso = 0, acc_par = 0, acc_perp = 0;  // at the last block's output (NaN: not computed)
  double kl = 0;                                // nats per token at the logits (NaN: not computed)
  double weight_err = 0;                        // ‖ΔW‖² / ‖W‖² over the unit's linears
  double one_minus_cos = 0;                     // the reference layer's mean 1 − cos(input, output)
};
struct SensitivityUnit {
  std::string name;
  int layer = 0;
  std::vector<std::string> members;  // Hugging Face module names
  std::vector<int64_t> in_features;  // of each member (empty: a file without the column)
  int64_t params = 0;
};
struct SensitivityCandidate {
  std::string name, method, family;  // family: quantization | pruning | dense
  std::string params_json;           // the resolved parameters, {"bits": 4, ...}
};
struct SensitivityTable {
  std::string path, model, model_type, calibration_json;
  double forward_equivalents = 0;
  std::vector<SensitivityUnit> units;
  std::vector<SensitivityCandidate> candidates;
  std::vector<std::vector<SensitivityCell>> cells;  // [unit][candidate]
};
SensitivityTable ReadSensitivity(const std::string& path);

struct Budget {
  enum class Kind { kBits, kSparsity } kind = Kind::kBits;
  double value = 0;
  std::string Describe() const;  // "bits=3.5"
};
// "bits=3.5" (average stored bits per weight, at most) or "sparsity=0.5" (average fraction of
// zero weights, at least); both weighted by parameter count.
Budget ParseBudget(const std::string& text);

// Predictor names allocate accepts (perp, par, iso, acc-perp, acc-par, acc-iso, kl, weight,
// cos-order) and the damage table [unit][candidate] of one; an unknown name lists the valid ones,
// one the file lacks (accumulated, kl) says how to compute it.
std::vector<std::string> PredictorNames();
std::vector<std::vector<double>> PredictorDamage(const SensitivityTable& t, const std::string& predictor);

// Multiple-choice knapsack: one choice per item, Σ cost ≤ capacity, Σ damage minimal.
struct Choice {
  std::vector<int> choice;  // per item; empty when infeasible
  double damage = 0, cost = 0;
  bool feasible() const { return !choice.empty(); }
};
// Exact dynamic programme over the budget cut into `steps` equal quanta q = capacity / steps, each
// cost rounded up to whole quanta (so the answer never exceeds the capacity). Exact when every
// cost is a multiple of q; otherwise its damage is at most the optimum at capacity − items·q.
// Ties: the lower total cost, then the earlier candidates.
Choice SolveMckp(const std::vector<std::vector<double>>& cost, const std::vector<std::vector<double>>& damage,
                 double capacity, int64_t steps = 100000);
// Enumerates every combination (tests; refuses more than 2^22).
Choice BruteForceMckp(const std::vector<std::vector<double>>& cost, const std::vector<std::vector<double>>& damage,
                      double capacity);

struct Allocation {
  Budget budget;
  std::string predictor;
  std::vector<int> choice;  // per unit, an index into candidates
  double damage = 0;
  double average = 0;  // achieved average bits or sparsity
};
Allocation Allocate(const SensitivityTable& t, const Budget& budget, const std::string& predictor,
                    int64_t steps = 100000);
// Every unit on one candidate (the uniform baseline), with its average and damage.
Allocation Uniform(const SensitivityTable& t, const Budget& budget, const std::string& predictor, int candidate);
double AchievedAverage(const SensitivityTable& t, const Budget& budget, const std::vector<int>& choice);

// A perpcomp recipe: the most used candidate as the recipe's method, an override per linear that
// chose another (`skip` for `none`), the sensitivity run's calibration; `perpcomp compress
// --recipe` runs it unchanged.
std::string AllocationRecipeYaml(const SensitivityTable& t, const Allocation& a, const std::string& name);
// llm-compressor (0.14) recipe YAML: quantization config_groups with `re:` targets, or pruning
// modifiers with one sparsity per group of linears (docs/ALLOCATION.md).
std::string ExportLlmCompressor(const SensitivityTable& t, const Allocation& a);
// llama-quantize arguments, one `--tensor-type blk.L.name=type` per line, GGUF names from the
// architecture table (model/arch.cc), bits mapped to llama.cpp types (docs/ALLOCATION.md), each
// type the one llama-quantize will store for that linear (LlamaCppStoredType).
struct LlamaQuantizeExport {
  std::string args;
  // "model.layers.0.self_attn.q_proj: q3_K needs rows that are a multiple of 256, it has 576 inputs; llama.cpp stores q4_0"
  std::vector<std::string> fallbacks;
  bool checked = true;           // false: the sensitivity file has no in_features column (types not checked)
  double bits_per_weight = 0;    // of the plan's linears as llama.cpp stores them (block scales included)
};
LlamaQuantizeExport ExportLlamaQuantize(const SensitivityTable& t, const Allocation& a);
// The llama.cpp type for a setting of `bits` (0: dense) with or without a zero point.
std::string LlamaCppType(int bits, bool zero_point);
// What llama-quantize stores for `type` on a linear of `in_features` inputs: a block type needs
// rows that are a multiple of its block (256 for the K types, 32 for q4_0..q8_0); otherwise
// llama.cpp falls back (src/llama-quant.cpp tensor_type_fallback): q2_K, q3_K -> q4_0, q6_K -> q8_0,
// and f16 where the fallback does not divide the row either.
std::string LlamaCppStoredType(const std::string& type, int64_t in_features);
// Bits per weight of a llama.cpp type (f16 16, q3_K 3.4375, q4_0 4.5, q4_1 5, q8_0 8.5, ...).
double LlamaCppBitsPerWeight(const std::string& type);

}  // namespace pc::recipes
