#include "metrics/perplexity.h"

#include <cmath>

#include "core/error.h"
#include "core/progress.h"
#include "metrics/block_stream.h"
#include "model/sizes.h"

namespace pc {

int64_t DefaultEvalBatch(const Model& model, int64_t seq_len) { return DefaultEvalBatch(model.config(), seq_len); }

at::Tensor NextTokenNll(const at::Tensor& logits, const at::Tensor& tokens) {
  const int64_t T = tokens.size(1);
  at::Tensor lp = at::log_softmax(logits.narrow(1, 0, T - 1).to(at::kFloat), -1);   // (B, T-1, V)
  at::Tensor target = tokens.narrow(1, 1, T - 1).unsqueeze(-1);                      // (B, T-1, 1)
  return -lp.gather(-1, target).squeeze(-1).to(at::kDouble);
}

PerplexityResult EvaluatePerplexity(Model& model, const at::Tensor& windows, int64_t batch, bool keep_token_nll,
                                    bool release_embedding) {
  PC_CHECK(windows.dim() == 2 && windows.size(0) > 0, "perplexity: no windows to evaluate");
  const int64_t W = windows.size(0), T = windows.size(1);
  if (batch <= 0) batch = DefaultEvalBatch(model, T);
  PerplexityResult r;
  r.windows = W;
  r.seq_len = T;
  r.tokens = W * (T - 1);
  std::vector<at::Tensor> parts;
  double total = 0;
  at::NoGradGuard no_grad;
  // Block by block over every window (metrics/block_stream.h): one block resident.
  BlockStream stream(model, windows, batch);
  Progress progress("eval", model.num_layers() + 1, "blocks");
  stream.Embed(release_embedding);
  for (int l = 0; l < model.num_layers(); ++l) {
    BlockHold hold(model, l);
    stream.Advance(l);
    progress.Add(1);
  }
  for (int64_t b = 0; b < stream.batches(); ++b) {
    at::Tensor nll = NextTokenNll(stream.Logits(b), stream.tokens(b));  // (n, T-1)
    total += nll.sum().item<double>();
    if (keep_token_nll) parts.push_back(nll);
  }
  progress.Add(1);
  progress.Finish();
  r.mean_nll = total / static_cast<double>(r.tokens);
  r.ppl = std::exp(r.mean_nll);
  if (keep_token_nll) r.token_nll = at::cat(parts, 0);
  PC_CHECK(std::isfinite(r.mean_nll), "perplexity: the mean NLL is not finite (", r.mean_nll,
           "); the model produced non-finite logits");
  return r;
}

}  // namespace pc
