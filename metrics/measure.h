// metrics/measure.h — directional error of a compressed model against its reference at every
// site, both error kinds and both frames, on token windows (docs/METRICS.md;
// docs/METRICS.md has every definition).
//
// The two models run in lockstep, block by block over every window (metrics/block_stream.h):
// block l of each model is loaded (when it is not resident), every batch of windows is run
// through it, and it is released; memory holds one block of each model, every window's residual
// stream of both (windows × T × hidden each) and one block's activations of a batch:
//   reference       its site tensors for the block (from the reference cache, or computed
//                   live and then written to the cache);
//   accumulated     the compressed block on the compressed model's own residual stream;
//   local           the compressed block on the reference's block input (attention update,
//                   its linears and the block output), and — unless the MLP reads the block
//                   input too (parallel residual) — the compressed MLP on the reference's MLP
//                   input; the final norm and logits: the compressed head on the reference's
//                   last hidden state.
// A linear's local output is its output inside the compressed sublayer run on the reference's
// incoming state (its raw input is not comparable: AWQ folds scales into norms and previous
// linears). Comparisons run inside forward hooks; nothing is modified.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "metrics/logit_compare.h"
#include "metrics/model_compare.h"
#include "metrics/reference_cache.h"
#include "metrics/site_stats.h"
#include "metrics/sites.h"
#include "model/model.h"

namespace pc {

struct MeasureOptions {
  int64_t batch = 0;         // windows per forward; 0: DefaultEvalBatch(reference, seq_len)
  bool per_token = false;    // keep every token's values (MeasureResult::per_token)
  CacheOptions cache;        // cache.dir "" : no reference cache
  std::string text_sha256;   // recorded in the cache manifest
  std::string reference_name = "the reference", compressed_name = "the compressed model";  // for messages
  // The models are not run again (the command): free each embedding once every window is
  // embedded, so that embeddings and heads are never resident together (an untied head left in
  // the checkpoint, LoadOptions::load_head = false, is loaded for the head pass).
  bool release_embeddings = false;
  // Called after block l (0-based) is measured for every batch; the sweep's fault injection
  // (pipeline/sweep_run.cc) uses it to stop a run mid-measurement.
  std::function<void(int l)> after_block;
};

// Per-token values (when MeasureOptions::per_token). Directional arrays are
// (entries, windows, seq_len) row-major float32 (valid: uint8); index [e, w, t] is site entry
// e at position t of window w. Prediction arrays are (windows, seq_len − 1): [w, t] is the
// prediction made at position t (of token t+1) — the same token order.
struct PerTokenValues {
  int64_t entries = 0, windows = 0, seq_len = 0;
  std::vector<float> iso, par, perp, p, ref_sq, cos, norm_ratio;
  std::vector<uint8_t> valid;
  std::vector<float> nll_ref, nll, kl;
  std::vector<uint8_t> top1;
};

struct MeasureResult {
  std::vector<SiteEntry> sites;
  std::vector<SiteAggregate> aggregates;  // one per site entry
  std::vector<WeightError> weights;
  DownstreamSummary downstream;           // accumulated logits against the reference's
  int64_t windows = 0, seq_len = 0, batch = 0;
  bool per_token_kept = false;
  PerTokenValues per_token;
  // Reference cache: the entry folder ("" when not cached) and whether it was complete.
  std::string cache_entry;
  bool cache_hit = false;
  bool cache_written = false;
  double seconds = 0;
};

// windows: (W, T) int64. Throws when the models differ in architecture or shapes
// (CheckSameArchitecture). The models may be loaded whole or without their blocks
// (LoadOptions::load_blocks = false); the results are the same bit for bit.
MeasureResult Measure(Model& reference, Model& compressed, const at::Tensor& windows, const MeasureOptions& options);

// Bytes of per-token memory for percentiles (and, with per_token, for every value) that a
// measurement of `tokens` tokens keeps; for logging and docs/METRICS.md.
int64_t MeasureMemoryBytes(const Model& model, int64_t tokens, bool per_token);

// The "sites" part of the reference cache for `model` (docs/METRICS.md "Reference cache").
CacheLayout SitesLayout(const Model& model);

}  // namespace pc
