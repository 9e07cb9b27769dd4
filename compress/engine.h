// compress/engine.h — the sequential, block-by-block calibration engine every method plugs into.
//
// Data flow per block i (N calibration windows of L tokens, hidden d):
//   X_i (N, L, d) ──► [original block] ──► Y_i           (kept when propagating original outputs)
//        │
//        ├─► TransformBlock() of each method (AWQ: scales, folding, clipping)
//        ├─► statistics of every compressed linear's input (per stage when true-sequential)
//        ├─► CompressLinear() for each planned linear, in place
//        └─► X_{i+1} = Y_i (AWQ's convention) or the compressed block's outputs (Wanda/GPTQ)
// The log of each compressed linear (its output error against the original on the first
// log_windows windows, and the naive method's) needs the original inputs and outputs' squares of
// those windows: taken in the pass that computes Y_i, else in the statistics pass when it is the
// only one and no transform precedes it, else in a pass over the logging windows alone.
// After the last block, when the plan compresses the head: statistics of final_norm(X_n) (the
// head's input), then CompressLinear() on the head.
// Peak memory: one block, X and Y, one micro-batch of intermediates (~64 MB), the inputs of the
// compressed linears on the logging windows, and a copy of the linear being compressed (of every
// compressed linear when a method transforms the block). Blocks come from the mmap'd checkpoint
// and are released once written out; the embedding is freed once the windows are embedded
// (release_embeddings). Measured in docs/PERFORMANCE.md, "Compression memory".
#pragma once

#include <ATen/ATen.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compress/method.h"
#include "model/model.h"

namespace pc {

struct PlanEntry {
  int layer = 0;       // -1 for the output head (Plan::head)
  int index = 0;       // in Block::linears; -1 for the head
  std::string name;    // HF module name
  Role role = Role::kQ;
  int method = -1;     // index into Plan::methods; -1: skipped
  std::string skip_reason;
};

struct Plan {
  std::vector<std::unique_ptr<Method>> methods;
  std::vector<const MethodInfo*> infos;  // registry entry of each method instance
  std::vector<PlanEntry> entries;        // every block linear, in model order
  // The output head (lm_head, GPT-NeoX's embed_out): skipped unless a recipe targets it
  // (docs/RECIPES.md, "The output head"). When it has a method, the engine compresses it after
  // the last block, on the final norm of the last block's calibration outputs.
  PlanEntry head = DefaultHead();
  bool propagate_compressed = false;

  static PlanEntry DefaultHead();

  bool AddsActivationScales() const;
  int Compressed() const;  // entries with a method
};

struct EngineOptions {
  int64_t micro_batch = 0;   // windows per forward; 0: DefaultMicroBatch (~64 MB of intermediates, model/sizes.h)
  int64_t log_windows = 4;   // calibration windows used for the logged per-linear output errors
  // Called when block `layer` is final; the engine unloads it afterwards when the model has a
  // checkpoint (streaming output).
  std::function<void(int layer)> on_block_done;
  // Free the token (and position) embeddings, and a head tied to them, once the calibration
  // windows are embedded: for streaming runs that wrote the top-level tensors before the engine
  // started.
  bool release_embeddings = false;
};

struct CompressResult {
  std::vector<Record> records;  // one "linear" record per plan entry, plus method records
  FoldedScales folded;          // scales block transforms folded into the weights (AWQ), per linear
  double seconds = 0;
  // Calibration windows the block forwards ran on: all of them, or only the logging windows when
  // no method of the plan reads statistics, outputs or block transforms (RTN, magnitude pruning).
  int64_t calib_windows = 0;
};

int64_t DefaultMicroBatch(const Model& model, int64_t seq_len);
// Whether a method of `plan` reads calibration windows beyond the logging ones (statistics,
// outputs, a block transform, activation scales); RunCompression runs the blocks on the first
// EngineOptions::log_windows windows alone when none does.
bool PlanReadsCalibration(const Plan& plan);
CompressResult RunCompression(Model& model, Plan& plan, const at::Tensor& calib_tokens, const EngineOptions& options);

// Compresses the linears `members` (indices into Block::linears) of the loaded block `layer` in
// place with method `m`, as RunCompression does for one method instance and nothing else: its
// block transform when it has one (AWQ: the transform changes the block's norms or other linears
// too), the input statistics it asks for on x (N, L, d), stage by stage when true-sequential,
// then CompressLinear. Records (one "linear" per member, and the method's) are appended to
// `records` when given. Returns the block forwards it ran over the N windows (statistics passes;
// a transform's own forwards are not counted). Used by the sensitivity scan
// (pipeline/sensitivity.h), which restores the block afterwards.
int CompressLinearsAlone(Model& model, int layer, const at::Tensor& x, Method& m, const std::vector<int>& members,
                         int64_t micro_batch, std::vector<Record>* records = nullptr);

// Runs block `layer` on x (N, L, d) in micro-batches; returns (N, L, d), written into `out` when
// given. `out` may be x itself: windows are independent, and each micro-batch's outputs are
// written only after its forward.
at::Tensor RunBlockBatched(Model& model, int layer, const at::Tensor& x, int64_t micro_batch,
                           ForwardHooks* hooks = nullptr, at::Tensor out = at::Tensor());

}  // namespace pc
