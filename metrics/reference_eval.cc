#include "metrics/reference_eval.h"

#include <cmath>
#include <memory>

#include "core/error.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/tensor_util.h"
#include "metrics/block_stream.h"
#include "metrics/model_compare.h"

namespace pc {

ReferenceEvalResult EvaluateAgainstReference(Model& model, const at::Tensor& windows, const ReferenceEvalOptions& o) {
  PC_CHECK(windows.dim() == 2 && windows.size(0) > 0 && windows.size(1) >= 2,
           "eval: expected at least one window of at least 2 tokens");
  const std::string ref_name = "reference '" + o.reference_dir + "'";
  CheckSameConfig(LoadModelConfig(o.reference_dir), model.config(), ref_name, o.model_name);
  const int64_t W = windows.size(0), T = windows.size(1);
  const int64_t batch = o.batch > 0 ? o.batch : DefaultEvalBatch(model, T);
  ReferenceEvalResult res;

  const CacheLayout layout = LogitsLayout(model.config().vocab_size);
  std::unique_ptr<CachePartReader> in;
  std::unique_ptr<CachePartWriter> out;
  CacheKey key;
  if (!o.cache.dir.empty()) {
    key = MakeCacheKey(o.cache.dir, o.reference_dir, ComputeDType(o.dtype), windows, o.text_sha256);
    res.cache_entry = CacheEntryDir(o.cache.dir, key);
    in = CachePartReader::Open(res.cache_entry, "logits", key, layout);
    res.cache_hit = in != nullptr;
    log::Info("eval", "reference cache ", res.cache_hit ? "hit" : "miss", ": ", res.cache_entry);
  }
  std::unique_ptr<Model> ref;
  if (in == nullptr) {
    LoadOptions lo;
    lo.dtype = o.dtype;
    lo.load_blocks = false;  // streamed block by block beside the model
    lo.load_head = false;    // loaded for the head pass
    ref = Model::Load(o.reference_dir, lo);
    CheckSameArchitecture(*ref, model, ref_name, o.model_name);
    if (!o.cache.dir.empty() && CacheHasRoom(o.cache, "logits", W * T * layout.BytesPerToken())) {
      out = std::make_unique<CachePartWriter>(res.cache_entry, "logits", key, layout, batch);
    }
  }

  DownstreamAccumulator acc;
  std::vector<at::Tensor> nll, nll_ref, kl, top1;
  at::NoGradGuard no_grad;
  // The model and the reference block by block in lockstep (metrics/block_stream.h): block l of
  // each resident, every window's residual stream of both kept.
  BlockStream ms(model, windows, batch);
  std::unique_ptr<BlockStream> rs = ref != nullptr ? std::make_unique<BlockStream>(*ref, windows, batch) : nullptr;
  Progress progress("eval", model.num_layers() + 1, "blocks");
  ms.Embed(o.release_embeddings);
  if (rs != nullptr) rs->Embed(/*release=*/true);  // loaded here, used once
  for (int l = 0; l < model.num_layers(); ++l) {
    BlockHold hold(model, l);
    ms.Advance(l);
    if (rs != nullptr) {
      BlockHold ref_hold(*ref, l);
      rs->Advance(l);
    }
    progress.Add(1);
  }
  for (int64_t b = 0; b < ms.batches(); ++b) {
    const int64_t w0 = ms.first(b), n = ms.count(b);
    at::Tensor tokens = ms.tokens(b);
    at::Tensor ref_logits;
    if (in != nullptr) {
      ref_logits = in->Read(0, w0, n);
    } else {
      ref_logits = rs->Logits(b);
      if (out != nullptr) out->Write(0, w0, ref_logits);
    }
    TokenLogitStats s = CompareLogits(ref_logits, ms.Logits(b), tokens);
    acc.Add(s);
    if (o.keep_per_token) {
      nll.push_back(s.nll);
      nll_ref.push_back(s.nll_ref);
      kl.push_back(s.kl);
      top1.push_back(s.top1);
    }
  }
  progress.Add(1);
  progress.Finish();
  if (out != nullptr) {
    out->Commit();
    res.cache_written = true;
  }
  res.downstream = acc.Finish();
  res.model.mean_nll = res.downstream.mean_nll;
  res.model.ppl = res.downstream.ppl;
  res.model.tokens = res.downstream.tokens;
  res.model.windows = W;
  res.model.seq_len = T;
  PC_CHECK(std::isfinite(res.model.mean_nll), "eval: the mean NLL is not finite (", res.model.mean_nll,
           "); the model produced non-finite logits");
  if (o.keep_per_token) {
    res.model.token_nll = at::cat(nll, 0);
    res.nll_ref = at::cat(nll_ref, 0);
    res.kl = at::cat(kl, 0);
    res.top1 = at::cat(top1, 0);
  }
  return res;
}

}  // namespace pc
