// metrics/reference_eval.h — perplexity of a model and, against a reference model on the same
// windows, ΔNLL, KL(reference ‖ model) and top-1 agreement (`perpcomp eval --reference`). The
// reference's logits come from the reference cache ("logits" part, shared with `measure`)
// when present; otherwise the reference is loaded, run and its logits cached.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <string>

#include "metrics/logit_compare.h"
#include "metrics/perplexity.h"
#include "metrics/reference_cache.h"
#include "model/model.h"

namespace pc {

struct ReferenceEvalOptions {
  std::string reference_dir;
  at::ScalarType dtype = at::kFloat;  // the reference's compute dtype (as the model's)
  int64_t batch = 0;                  // 0: DefaultEvalBatch
  bool keep_per_token = false;
  CacheOptions cache;                 // dir "" : no cache
  std::string text_sha256;
  std::string model_name = "model";   // for messages
  bool release_embeddings = false;    // the model is not run again: as MeasureOptions::release_embeddings
};

struct ReferenceEvalResult {
  PerplexityResult model;        // the evaluated model (token_nll when keep_per_token)
  DownstreamSummary downstream;  // against the reference
  // (windows, seq_len − 1) when keep_per_token: nll_ref, kl float64; top1 uint8.
  at::Tensor nll_ref, kl, top1;
  std::string cache_entry;
  bool cache_hit = false, cache_written = false;
};

// Checks the reference's config against the model's (first differing field named) before
// any work; on a cache miss also the tensors (CheckSameArchitecture).
ReferenceEvalResult EvaluateAgainstReference(Model& model, const at::Tensor& windows, const ReferenceEvalOptions& o);

}  // namespace pc
