// compress/awq_block.h — AWQ on one block: capture the calibration statistics, search every
// scale group's α on the original block, fold all scales, then search and apply the clipping.
//
// Order and data, as llm-awq's run_awq (docs/AWQ.md):
//   1. one pass of the original block over the calibration windows (micro-batches) captures
//      Σ|x| of each group's input, the full inputs of groups measured on their member, the
//      original attention / MLP updates and the MLP's input, and 1 of every
//      max(1, tokens / clip_tokens) tokens of each clipped linear's input;
//   2. every group is searched against the original block (weights restored after each α);
//   3. all scales are folded (compress/awq_groups.h), the sampled clip inputs divided by s;
//   4. each clipped linear (not q, k, nor a fused q/k/v unless clip_fused_v: then its v rows)
//      gets its per-(row, group) clipping searched on the scaled weights and applied.
// The quantization itself is left to Method::CompressLinear (the shared quantizer).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compress/awq_search.h"
#include "compress/method.h"

namespace pc::awq {

struct BlockOptions {
  SearchOptions search;
  bool clip = true;
  int clip_steps = 10;
  int64_t clip_tokens = 512;
  bool clip_fused_v = false;
};

// What the block transform learned about one linear, for its "linear" record.
struct LinearNote {
  double alpha = -1;        // α of the group that scaled it (-1: none)
  std::string group;        // that group's name
  at::Tensor clip_step;     // (rows, groups) int64 chosen shrink step, undefined when not clipped
  at::Tensor out_scale;     // (out,) float32 factor folded into its output rows (1/s), undefined: none
  at::Tensor in_scale;      // (in,) float32 s its input columns were multiplied by, undefined: none
};

// Runs steps 1–4 on scope's block for the linears in scope.members; appends one "awq_group"
// record per group of the architecture (searched or skipped, with the reason) to scope.records.
void TransformAwqBlock(BlockScope& scope, const BlockOptions& options, const std::string& method,
                       std::map<std::string, LinearNote>* notes);

// Summary values of chosen shrink steps: mean factor, fraction clipped (step > 0), and the
// fraction of (row, group) pairs at each step (`steps` entries).
struct ClipSummary {
  double mean_factor = 1, fraction_clipped = 0;
  std::vector<double> histogram;
};
ClipSummary SummarizeClip(const std::vector<at::Tensor>& steps, int n_steps);

}  // namespace pc::awq
