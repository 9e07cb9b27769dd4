// metrics/perplexity.h — perplexity over token windows (docs/METRICS.md "Downstream loss"):
// mean next-token NLL over windows × (seq_len − 1) predicted tokens, ppl = exp(mean NLL).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

#include "model/model.h"

namespace pc {

struct PerplexityResult {
  double mean_nll = 0;   // nats per predicted token
  double ppl = 0;
  int64_t tokens = 0;    // predicted tokens = windows × (seq_len − 1)
  int64_t windows = 0;
  int64_t seq_len = 0;
  at::Tensor token_nll;  // (windows, seq_len − 1) float64, when asked
};

// Windows in batches of `batch` (0: sized so a batch's logits stay under ~256 MB).
int64_t DefaultEvalBatch(const Model& model, int64_t seq_len);
// Runs block by block over every window (metrics/block_stream.h): a model loaded without its
// blocks holds one at a time. `release_embedding`: the model is not run again (as
// MeasureOptions::release_embeddings).
PerplexityResult EvaluatePerplexity(Model& model, const at::Tensor& windows, int64_t batch = 0,
                                    bool keep_token_nll = false, bool release_embedding = false);
// Per-token NLL (B, T−1) float64 of next-token prediction for logits (B, T, V) and tokens (B, T).
at::Tensor NextTokenNll(const at::Tensor& logits, const at::Tensor& tokens);

}  // namespace pc
