// metrics/results_h5.h — measurement and evaluation results into the store (docs/HDF5.md,
// "Layouts by stage": measure, eval). Each run is one group /runs/<name> so that sweeps can
// gather runs from run files with store::CopyGroup.
#pragma once

#include <ATen/ATen.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "metrics/lm_eval_import.h"
#include "metrics/measure.h"
#include "metrics/minimal_pairs.h"
#include "metrics/reference_eval.h"
#include "store/group.h"

namespace pc {

// Version of the metric definitions (docs/METRICS.md), recorded as `metrics_conventions`.
// 2: KL per token in float64 from the float32 logits; AWQ's folded scales carried through at the
// linear sites and in rel_fro; the block_update site and the relnorm columns.
inline constexpr int kMetricsConventionsVersion = 2;

// Sets every member of `attrs` (string, integer, float, bool; other values as JSON text) as an
// attribute of `group`.
void SetAttrs(const store::Group& group, const nlohmann::json& attrs);

// /runs/<run>/{sites,weights,downstream[,per_token]} of a "measure" file. `windows` (W, T).
void WriteMeasureRun(const store::Group& run, const MeasureResult& result, const at::Tensor& windows);

// Minimal-pair results under `group`: tables files, terms, items; attributes accuracy, pairs,
// correct, ties.
void WritePairs(const store::Group& group, const std::vector<MinimalPair>& pairs, const std::vector<PairScore>& scores,
                const PairAccuracy& accuracy);

// lm-evaluation-harness scores under `group`: table scores (task, metric, filter, value) and
// attributes source, sha256, model_args.
void WriteLmEval(const store::Group& group, const LmEvalResults& results);

// Downstream summary as attributes of `group`.
void WriteDownstream(const store::Group& group, const DownstreamSummary& d);

}  // namespace pc
