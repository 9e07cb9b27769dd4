// tests/compress/prune_test_util.h — helpers for the pruning / GPTQ / SparseGPT tests: method
// instances from parameters, synthetic calibration inputs and their statistics, output errors.
#pragma once

#include <ATen/ATen.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "compress/engine.h"
#include "compress/method.h"
#include "model/model.h"

namespace pc::test {

// Error budgets of the GPTQ / SparseGPT comparisons (quantized values may land on the neighbouring
// grid point when float sums differ in the last bit; the logged "error" sums the same terms).
constexpr double kMaxGridMismatch = 0.005;      // fraction of values, against obs_reference.py
constexpr double kMaxBlockSizeMismatch = 0.01;  // fraction of values, lazy block 1 vs 128
constexpr double kLossRelTol = 1e-4;            // logged error against obs_reference.py
constexpr double kBlockSizeLossRelTol = 0.01;   // logged error, lazy block 1 vs 128

// A built-in method instance, created as the plan layer does (`where` as a recipe line).
std::unique_ptr<Method> MakeMethod(const std::string& name, const std::map<std::string, ParamScalar>& params = {},
                                   const std::string& where = "r.yaml:3");

// Correlated inputs (n, in) float32 with unequal column scales (some columns 10x larger).
at::Tensor SyntheticInputs(int64_t n, int64_t in, uint64_t seed);
// A random weight (out, in) float32.
at::Tensor RandomWeight(int64_t out, int64_t in, uint64_t seed);
// Σx², Σxxᵀ (float64) and the token count of x (n, in), as the engine collects them.
InputStats StatsOf(const at::Tensor& x);
// A linear named `name` with weight w (cloned).
Linear MakeLinear(const at::Tensor& w, const std::string& name = "model.layers.0.mlp.down_proj");

// ‖x (w_hat − w)ᵀ‖² / ‖x wᵀ‖² in float64.
double OutputRelError(const at::Tensor& x, const at::Tensor& w, const at::Tensor& w_hat);

// Compresses a copy of w with `method` on inputs x; returns the new weight and fills `record`.
at::Tensor Compress(Method& method, const at::Tensor& w, const at::Tensor& x, Record* record = nullptr);

// Runs the engine with one method on every block linear of `model` (calibration: random tokens,
// compressed outputs propagated). The engine unloads blocks of a model loaded from disk when it
// is done with them, so the compressed block linears are returned (name -> weight, model order).
struct CompressedModel {
  CompressResult result;
  std::vector<std::pair<std::string, at::Tensor>> weights;
};
CompressedModel CompressModel(Model& model, const std::string& method, const std::map<std::string, ParamScalar>& params,
                              int64_t windows = 6, int64_t length = 24, uint64_t seed = 1);

// Fraction of elements where a and b differ by more than tol · max|b| (quantization may round a
// few values to the neighbouring grid point when float sums differ in the last bit).
double MismatchFraction(const at::Tensor& a, const at::Tensor& b, double tol = 1e-4);

// tests/compress/obs_reference.py (GPTQ / SparseGPT written as the reference repositories write
// them) on w (out, in) and x (n, in): the compressed weight, and its "error" in *loss.
at::Tensor ObsReference(const std::string& method, const at::Tensor& w, const at::Tensor& x,
                        const nlohmann::json& params, double* loss = nullptr);

// A tokenizer.json for the reference models written into `dir` (no merges, one piece per id,
// <|endoftext|> = 1): RunCompress needs a tokenizer; self-sampled calibration starts from
// <|endoftext|> and never encodes text.
void AddTokenizer(const std::string& dir, int64_t vocab);
// A copy of the reference model of `arch` (hf_reference.py make-model, `variant` "" or e.g.
// "tied") with that tokenizer, in a folder of its own; `extra` goes to make-model ("--dtype f16").
std::string ReferenceWithTokenizer(const std::string& arch, const std::string& variant, const std::string& extra = "");

}  // namespace pc::test
