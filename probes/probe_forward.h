// probes/probe_forward.h — scoring a model through a forward that may intervene: mean next-token
// NLL over text windows (the perplexity convention of metrics/perplexity.h) and minimal-pair
// accuracy (metrics/minimal_pairs.h, every sentence scored alone), both computed by calling the
// given forward instead of the plain one.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <vector>

#include "metrics/minimal_pairs.h"
#include "model/model.h"
#include "model/tokenizer/tokenizer.h"

namespace pc::probes {

// The inputs every probe scores on.
struct ProbeInputs {
  at::Tensor windows;                    // (W, T) int64 token windows (W may be 0 when only pairs are scored)
  int64_t batch = 0;                     // windows per forward (0: metrics' DefaultEvalBatch)
  std::vector<MinimalPair> pairs;        // may be empty
  const Tokenizer* tokenizer = nullptr;  // required when `pairs` is not empty
  int64_t pair_batch_tokens = 8192;      // padded tokens per minimal-pair forward
};

// Numbers the forwards of one evaluation: text batch k is key k, minimal-pair batch k is
// kPairKeyBase + k. The same batch gets the same key in every evaluation, so a seeded intervention
// draws the same numbers for it whatever else changes (the kind of repair, for instance).
inline constexpr uint64_t kPairKeyBase = uint64_t{1} << 40;

// tokens (B, T) -> logits (B, T, V) float32, for the batch numbered `key`.
using ProbeForward = std::function<at::Tensor(const at::Tensor& tokens, uint64_t key)>;

// model.Forward(tokens, hooks), the key ignored.
ProbeForward HookedForward(Model& model, ForwardHooks* hooks);

struct ProbeScore {
  double loss = std::numeric_limits<double>::quiet_NaN();  // mean next-token NLL, nats per predicted token
  double ppl = std::numeric_limits<double>::quiet_NaN();   // exp(loss)
  int64_t tokens = 0;                                      // predicted tokens: W × (T − 1)
  std::optional<PairAccuracy> pairs;                       // with ProbeInputs::pairs
  double accuracy() const { return pairs ? pairs->overall.accuracy : std::numeric_limits<double>::quiet_NaN(); }
};

// Loss over `in.windows` (when W > 0) and accuracy over `in.pairs` (when given), through `forward`.
// Without gradients. A non-finite loss is reported as it is (an intervention may break the model).
ProbeScore Score(Model& model, const ProbeInputs& in, const ProbeForward& forward);

}  // namespace pc::probes
