#include "probes/probe_forward.h"

#include <cmath>

#include "core/error.h"
#include "metrics/perplexity.h"

namespace pc::probes {

ProbeForward HookedForward(Model& model, ForwardHooks* hooks) {
  return [&model, hooks](const at::Tensor& tokens, uint64_t) { return model.Forward(tokens, hooks); };
}

ProbeScore Score(Model& model, const ProbeInputs& in, const ProbeForward& forward) {
  ProbeScore s;
  at::NoGradGuard no_grad;
  if (in.windows.defined() && in.windows.size(0) > 0) {
    PC_CHECK(in.windows.dim() == 2 && in.windows.size(1) >= 2, "probe: windows must be (W, T) with T >= 2, got ",
             in.windows.sizes());
    const int64_t W = in.windows.size(0), T = in.windows.size(1);
    const int64_t batch = in.batch > 0 ? in.batch : DefaultEvalBatch(model, T);
    double total = 0;
    uint64_t key = 0;
    for (int64_t start = 0; start < W; start += batch, ++key) {
      at::Tensor tok = in.windows.narrow(0, start, std::min(batch, W - start));  // (B, T)
      total += NextTokenNll(forward(tok, key), tok).sum().item<double>();
    }
    s.tokens = W * (T - 1);
    s.loss = total / static_cast<double>(s.tokens);
    s.ppl = std::exp(s.loss);
  }
  if (!in.pairs.empty()) {
    PC_CHECK(in.tokenizer != nullptr, "probe: minimal pairs need the model's tokenizer");
    PairScoringOptions options;
    options.max_batch_tokens = in.pair_batch_tokens;
    uint64_t key = kPairKeyBase;
    options.forward = [&](const at::Tensor& tokens) { return forward(tokens, key++); };
    std::vector<PairScore> scores = ScoreMinimalPairs(model, *in.tokenizer, in.pairs, options);
    s.pairs = AggregatePairs(in.pairs, scores);
  }
  return s;
}

}  // namespace pc::probes
