#include "metrics/perplexity.h"

#include <cmath>

#include "core/error.h"
#include "core/progress.h"
#include "model/sizes.h"

namespace pc {

int64_t DefaultEvalBatch(const Model& model, int64_t seq_len) { return DefaultEvalBatch(model.config(), seq_len); }

at::Tensor NextTokenNll(const at::Tensor& logits, const at::Tensor& tokens) {
  const int64_t T = tokens.size(1);
  at::Tensor lp = at::log_softmax(logits.narrow(1, 0, T - 1).to(at::kFloat), -1);   // (B, T-1, V)
  at::Tensor target = tokens.narrow(1, 1, T - 1).unsqueeze(-1);                      // (B, T-1, 1)
  return -lp.gather(-1, target).squeeze(-1).to(at::kDouble);
}

PerplexityResult EvaluatePerplexity(Model& model, const at::Tensor& windows, int64_t batch, bool keep_token_nll) {
  PC_CHECK(windows.dim() == 2 && windows.size(0) > 0, "perplexity: no windows to evaluate");
  const int64_t W = windows.size(0), T = windows.size(1);
  if (batch <= 0) batch = DefaultEvalBatch(model, T);
  PerplexityResult r;
  r.windows = W;
  r.seq_len = T;
  r.tokens = W * (T - 1);
  std::vector<at::Tensor> parts;
  double total = 0;
  Progress progress("eval", W, "windows");
  at::NoGradGuard no_grad;
  for (int64_t start = 0; start < W; start += batch) {
    int64_t n = std::min(batch, W - start);
    at::Tensor tok = windows.narrow(0, start, n);
    at::Tensor nll = NextTokenNll(model.Forward(tok), tok);  // (n, T-1)
    total += nll.sum().item<double>();
    if (keep_token_nll) parts.push_back(nll);
    progress.Add(n);
  }
  r.mean_nll = total / static_cast<double>(r.tokens);
  r.ppl = std::exp(r.mean_nll);
  if (keep_token_nll) r.token_nll = at::cat(parts, 0);
  PC_CHECK(std::isfinite(r.mean_nll), "perplexity: the mean NLL is not finite (", r.mean_nll,
           "); the model produced non-finite logits");
  return r;
}

}  // namespace pc
