// compress/method.h — the one interface every compression method implements, and the
// statistics the engine collects for it.
//
// The engine (compress/engine.h) walks the model block by block. For each block it:
//   1. asks every method instance that TransformsBlock() to TransformBlock() (AWQ: scale
//      search, folding, clipping; most methods have none);
//   2. runs the block on the calibration windows collecting, for every linear a method
//      will compress, the input statistics the method asked for (stats());
//   3. calls CompressLinear() for each such linear, which changes the weight in place.
// Methods never include metrics/; they use core's directional kernel where they need it.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compress/params.h"
#include "model/folded_scales.h"
#include "model/model.h"

namespace pc {

// Input statistics of one linear over the calibration tokens (float64 sums).
enum StatKind : uint32_t {
  kStatAbsSum = 1u << 0,  // Σ|x_j|          AWQ's activation magnitude (mean = / tokens)
  kStatSqSum = 1u << 1,   // Σ x_j²          Wanda's ‖X_j‖²
  kStatGram = 1u << 2,    // Σ x xᵀ          GPTQ / SparseGPT Hessian (up to 2/n)
};

struct InputStats {
  int64_t tokens = 0;
  at::Tensor abs_sum;  // (in,) float64
  at::Tensor sq_sum;   // (in,) float64
  at::Tensor gram;     // (in, in) float64
  std::map<std::string, at::Tensor> extra;  // method-specific accumulators (see Method::Accumulate)
  // Values computed from these statistics by a method, kept for the other linears that read the
  // same input (q/k/v, gate/up share one InputStats): compress/hessian.h's SharedHessianFactor.
  mutable std::map<std::string, std::shared_ptr<const void>> derived;
};

// A flat record for the log (compress.h5): scalars, strings and arrays by name. AWQ writes
// one per scale group (loss curves over α), the engine one per linear.
struct Record {
  std::string kind;  // "linear", "awq_group", ...
  std::string name;
  std::map<std::string, double> values;
  std::map<std::string, std::string> text;
  std::map<std::string, std::vector<double>> arrays;
};

// What a block-level transform may use.
struct BlockScope {
  Model& model;
  int layer;
  const at::Tensor& input;       // (N, L, d) the block's calibration input
  std::vector<int> members;      // indices (Block::linears) assigned to this method instance
  int64_t micro_batch;           // windows per forward
  std::vector<Record>* records;  // append group records here
};

class Method {
 public:
  explicit Method(std::string name, MethodParams params) : name_(std::move(name)), params_(std::move(params)) {}
  virtual ~Method() = default;

  const std::string& name() const { return name_; }
  const MethodParams& params() const { return params_; }
  std::string Describe() const { return name_ + "(" + params_.Describe() + ")"; }

  // Bitmask of StatKind the engine must collect for this method's linears.
  virtual uint32_t stats() const { return 0; }
  // Method-specific statistics from a micro-batch: x (n, in) the linear's input and y (n, out) its
  // output, accumulated into stats.extra (Wanda-⊥). Called only when WantsOutputs().
  virtual bool WantsOutputs() const { return false; }
  virtual void Accumulate(const Linear& linear, const at::Tensor& x, const at::Tensor& y, InputStats& stats) const {}
  // GPTQ's true-sequential order: statistics are collected stage by stage with the earlier
  // stages already compressed.
  virtual bool TrueSequential() const { return false; }
  // AWQ writes act(x)/s into the checkpoint for activation scale groups.
  virtual bool AddsActivationScales() const { return false; }
  // Block-level transform before statistics are collected (AWQ: scales, folding, clipping). The
  // engine calls TransformBlock() only for methods whose TransformsBlock() is true; it then keeps
  // the block's original weights and inputs for the log, which a method without one does not pay.
  virtual bool TransformsBlock() const { return false; }
  virtual void TransformBlock(BlockScope& scope) {}
  // Compresses `linear` in place; values go into `record` (e.g. "sparsity", "alpha").
  virtual void CompressLinear(Linear& linear, const InputStats& stats, Record& record) = 0;
  // Per output row (out,) float32, the factor by which TransformBlock deliberately multiplied
  // this linear's output (AWQ folds 1/s into the rows of a previous linear); the engine's logged
  // err_after compares with the original output times it. Undefined: the output is unchanged.
  // Called after CompressLinear.
  virtual at::Tensor OutputScale(const Linear& linear) const { return at::Tensor(); }
  // The scales TransformBlock folded into the block's linears on purpose (every linear it
  // touched, compressed or not: input columns ·s, output rows ·1/s), moved into `into` after the
  // block's linears are compressed; measure and the weight statistics carry the reference through
  // them (model/folded_scales.h).
  virtual void TakeFoldedScales(FoldedScales& into) {}
  // The method's naive counterpart on an original weight (RTN for quantizers, magnitude for
  // pruners), for the logged "error before"; undefined: none.
  virtual at::Tensor NaiveWeight(const at::Tensor& w) const { return at::Tensor(); }

 private:
  std::string name_;
  MethodParams params_;
};

// ---- registry -------------------------------------------------------------------------------

struct MethodInfo {
  std::string name;
  std::string summary;
  std::string family;            // "quantization" | "pruning" (for rankings left-one-out)
  std::vector<ParamSpec> params;
  std::string default_windowing;  // "awq" | "random"
  bool default_propagate_compressed = false;
  // Builds an instance; cross-parameter checks throw with `where` (the recipe line) in front.
  std::function<std::unique_ptr<Method>(const MethodParams&, const std::string& where)> create;
};

class MethodRegistry {
 public:
  static const MethodRegistry& Builtins();
  void Add(MethodInfo info);
  // Unknown names: error listing the registered ones; `where` prefixes it.
  const MethodInfo& Get(const std::string& name, const std::string& where = "") const;
  bool Has(const std::string& name) const;
  std::vector<std::string> Names() const;

 private:
  std::vector<MethodInfo> methods_;
};

// Registration functions of the built-in methods (compress/<method>.cc).
void RegisterRtn(MethodRegistry& r);
void RegisterBuiltinExtras(MethodRegistry& r);  // the other methods (defined in builtin_methods.cc)

}  // namespace pc
