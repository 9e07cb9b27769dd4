// pipeline/memory_estimate.h — the peak resident memory of compress, eval, measure and sweep,
// estimated before any work from the model's config.json and the command's options only
// (no weights read), and the --max-memory check (docs/RELIABILITY.md, "Crash safety and
// resource limits").
//
// The model follows what the code keeps alive at its peak, as a sum of terms (an upper bound:
// terms that are alive at different times are still added):
//   compress: top-level weights (embedding, head) + one block (compute copy, its checkpoint
//             pages, the engine's two weight clones) + calibration activations X and Y
//             (N, L, d) float32 + the method's statistics (Gram matrices in×in float64 and
//             their working copies for gptq/sparsegpt; AWQ's captured block and module inputs)
//             + the logging windows' captures + one micro-batch of intermediates + a fixed
//             process overhead (LibTorch, allocator, code);
//   eval/measure: block by block (metrics/block_stream.h): one block and the larger of the
//             embedding and the head of each model (the embedding is freed before the blocks, the
//             head loaded after them; compute copy and checkpoint pages; the whole model when
//             minimal pairs run) + every window's residual stream of each model + one batch's logits and their
//             log-softmax/KL temporaries + one batch's activations (attention scores capped at
//             the query-chunk size, model/attention.h) + fixed overhead;
//   sweep:    the reference held through the runs (embedding and head; whole with minimal pairs)
//             + the largest of its stages.
// bench/compress/memory_bench.cc checks it against measured peaks (docs/PERFORMANCE.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"
#include "recipes/recipe_spec.h"

namespace pc::pipeline {

struct MemoryTerm {
  std::string name;
  double bytes = 0;
};

struct MemoryEstimate {
  std::string what;               // "compress", "eval", "measure", "sweep"
  std::vector<MemoryTerm> terms;  // every term (zero terms are dropped)
  double Total() const;
  void Add(const std::string& name, double bytes);
  // "estimated peak 5.3 GiB (calibration activations 3.1 GiB, block weights 0.4 GiB, ...)":
  // the `max_terms` largest terms, then "N more".
  std::string Describe(size_t max_terms = 5) const;
};

// Bytes per weight element on disk from config.json's torch_dtype: 2 for bfloat16/float16,
// else (float32, absent) 4.
int DiskWeightBytes(const ModelConfig& config);
// The fixed overhead of a perpcomp process (code, LibTorch, allocator arenas, threads, and the
// cache of freed tensors, core/cpu_allocator.h).
double ProcessOverheadBytes();

struct CompressMemoryOptions {
  std::vector<std::string> methods;  // every method the recipe names (RecipeMethods)
  int64_t samples = 128, seq_len = 512;
  int disk_bytes = 4;                // DiskWeightBytes
  bool self_calibration = false;     // --calib self:N (the whole model is loaded to sample)
  bool awq_gemm = false;             // --format awq-gemm (the compressed model is read back whole)
  int64_t micro_batch = 0;           // 0: model/sizes.h DefaultMicroBatch
  int64_t log_windows = 4;           // EngineOptions::log_windows
  int64_t calib_text_bytes = 0;      // size of the calibration text file (0: self:N)
};
// The main method and every override's method of a recipe, without duplicates.
std::vector<std::string> RecipeMethods(const recipes::RecipeSpec& recipe);
MemoryEstimate EstimateCompress(const ModelConfig& config, const CompressMemoryOptions& o);
// The options of one compression run as `perpcomp compress` would run it: calibration samples
// and length from the command line (0: unset), else the recipe, else 128 × min(512, context);
// the calibration text's size when `calib_source` is a file ("self:N": self-sampling).
CompressMemoryOptions CompressMemoryFor(const ModelConfig& config, const recipes::RecipeSpec& recipe, int64_t samples,
                                        int64_t seq_len, const std::string& calib_source,
                                        const std::string& format = "hf", int64_t micro_batch = 0);

struct EvalMemoryOptions {
  int64_t windows = 1, seq_len = 512;
  int64_t batch = 0;        // 0: model/sizes.h DefaultEvalBatch
  int weight_bytes = 4;     // the weights in memory: --dtype f32 | bf16
  int compute_bytes = 4;    // the arithmetic and activations (Model::compute_dtype(): f32 for bf16
                            // weights on a CPU without native bf16)
  int disk_bytes = 4;
  bool reference = false;   // eval --reference: a second model and the KL temporaries
  bool per_token = false;   // values of every token kept
  int64_t text_bytes = 0;   // size of the evaluation text file
  int64_t pair_tokens = 0;  // minimal pairs: padded tokens per forward (0: none)
  // The models run once (eval, measure): each embedding is freed after the windows are embedded
  // and the untied head loaded after the blocks (MeasureOptions::release_embeddings).
  bool release_embeddings = true;
};
MemoryEstimate EstimateEval(const ModelConfig& config, const EvalMemoryOptions& o);
// measure: the reference and the compressed model, both compared site by site.
MemoryEstimate EstimateMeasure(const ModelConfig& config, const EvalMemoryOptions& o);
// sweep: the reference model is held through every run; each run compresses (one estimate
// per run), then measures and evaluates. The largest stage, with the held reference.
MemoryEstimate EstimateSweep(const ModelConfig& config, const std::vector<CompressMemoryOptions>& runs,
                             const EvalMemoryOptions& eval);

// Throws pc::Error when e.Total() > limit_bytes: "estimated peak ... exceeds <option> <limit>;
// nothing was done; <hint>" (the command names itself in front). `hint` says what to reduce.
void CheckMemoryLimit(const MemoryEstimate& e, int64_t limit_bytes, const std::string& option,
                      const std::string& hint);
// MemAvailable of /proc/meminfo in bytes (the kernel's estimate of what can be allocated without
// swapping); -1 when unknown. ParseMemAvailable reads it from the file's text.
int64_t AvailableMemoryBytes();
int64_t ParseMemAvailable(const std::string& meminfo);
// The check every command that can exceed the machine's memory runs before any work: against
// `limit_bytes` (--max-memory) when it is positive, else against AvailableMemoryBytes() (skipped
// when unknown). Throws with the estimate, the limit and `hint` (what to reduce).
void CheckMemoryFits(const MemoryEstimate& e, int64_t limit_bytes, const std::string& hint);

}  // namespace pc::pipeline
