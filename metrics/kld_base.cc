#include "metrics/kld_base.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/progress.h"
#include "core/sha256.h"
#include "core/tensor_util.h"
#include "metrics/perplexity.h"
#include "metrics/reference_cache.h"
#include "store/file.h"
#include "store/untrusted.h"

namespace pc {

namespace {

// log Σ_v exp(x_v) in float64 from float32 logits.
double LogSumExp(const float* x, int64_t V) {
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t v = 0; v < V; ++v) m = std::max(m, static_cast<double>(x[v]));
  double s = 0;
  for (int64_t v = 0; v < V; ++v) s += std::exp(static_cast<double>(x[v]) - m);
  return m + std::log(s);
}

// Row r = (b, t) of logits (B, T, V) lies at b·T·V + t·V; rows run over t < T−1.
int64_t RowOffset(int64_t r, int64_t T, int64_t V) { return (r / (T - 1)) * T * V + (r % (T - 1)) * V; }

void Hash(Sha256& h, const at::Tensor& t) {
  at::Tensor c = t.contiguous();
  h.Update(c.data_ptr(), static_cast<size_t>(c.numel() * c.element_size()));
}

void Hash(Sha256& h, const std::vector<double>& v) { h.Update(v.data(), v.size() * sizeof(double)); }

// sha256 of every array of a base file, in a fixed order (the content_sha256 attribute).
std::string ContentSha256(const KldBase& b) {
  Sha256 h;
  Hash(h, b.tokens);
  Hash(h, b.logits.top_ids);
  Hash(h, b.logits.top_logp);
  Hash(h, b.logits.tail_mass);
  Hash(h, b.logits.nll);
  Hash(h, b.logits.top1);
  Hash(h, b.pair_logp_good);
  Hash(h, b.pair_logp_bad);
  h.Update(b.tokenizer_probe.data(), b.tokenizer_probe.size() * sizeof(int64_t));
  return h.HexDigest();
}

template <typename T>
at::Tensor ToTensor(store::Array<T> a, at::ScalarType type) {
  std::vector<int64_t> shape(a.shape.begin(), a.shape.end());
  return at::from_blob(a.values.data(), shape, at::TensorOptions().dtype(type)).clone();
}

// The text the tokenizer probe reads.
constexpr const char* kProbeText =
    "The quick brown fox jumps over the lazy dog. 0123456789 3.14159 -42 1,000,000\n"
    "  Indented\ttab\r\nnew lines;  (parentheses) [brackets] {braces} \"quotes\" 'apostrophe's\n"
    "Ünïcödé façade naïve café — “curly” … 日本語のテキスト 中文 한국어 Ελληνικά Русский 😀🚀 ";

}  // namespace

CompactLogits CompactLogits::Narrow(int64_t first_window, int64_t count) const {
  return {top_ids.narrow(0, first_window, count), top_logp.narrow(0, first_window, count),
          tail_mass.narrow(0, first_window, count), nll.narrow(0, first_window, count),
          top1.narrow(0, first_window, count)};
}

CompactLogits CompactFromLogits(const at::Tensor& logits, const at::Tensor& tokens, int64_t k) {
  PC_CHECK(logits.dim() == 3 && tokens.dim() == 2 && tokens.size(0) == logits.size(0) &&
               tokens.size(1) == logits.size(1) && logits.size(1) >= 2,
           "kld: expected logits (B, T, V) and tokens (B, T) with T >= 2, got ", ShapeString(logits.sizes()), " and ",
           ShapeString(tokens.sizes()));
  const int64_t B = logits.size(0), T = logits.size(1), V = logits.size(2);
  PC_CHECK(k >= 1 && k <= V, "kld: --top-k must be in 1 .. ", V, " (the vocabulary), got ", k);
  const at::Tensor x = logits.to(at::kFloat).contiguous();  // (B, T, V)
  CompactLogits c;
  {
    at::Tensor lr = at::log_softmax(x.narrow(1, 0, T - 1), -1);  // (B, T−1, V)
    c.nll = TargetNll(lr, tokens);
    c.top1 = lr.argmax(-1).to(at::kInt);
  }
  // topk of the float32 logits: every other token's logit is <= the k-th's, in float64 too.
  c.top_ids = std::get<1>(at::topk(x.narrow(1, 0, T - 1), k, -1, /*largest=*/true, /*sorted=*/true))
                  .to(at::kInt)
                  .contiguous();  // (B, T−1, k)
  c.top_logp = at::empty({B, T - 1, k}, at::kDouble);
  c.tail_mass = at::empty({B, T - 1}, at::kDouble);
  const float* px = x.data_ptr<float>();
  const int32_t* ids = c.top_ids.data_ptr<int32_t>();
  double* lp = c.top_logp.data_ptr<double>();
  double* tail = c.tail_mass.data_ptr<double>();
  at::parallel_for(0, B * (T - 1), std::max<int64_t>(1, 65536 / V), [&](int64_t begin, int64_t end) {
    std::vector<char> top(static_cast<size_t>(V));
    for (int64_t r = begin; r < end; ++r) {
      const float* row = px + RowOffset(r, T, V);
      const double lse = LogSumExp(row, V);
      std::fill(top.begin(), top.end(), 0);
      for (int64_t j = 0; j < k; ++j) {
        const int32_t id = ids[r * k + j];
        top[id] = 1;
        lp[r * k + j] = static_cast<double>(row[id]) - lse;
      }
      double s = 0;
      for (int64_t v = 0; v < V; ++v) {
        if (!top[v]) s += std::exp(static_cast<double>(row[v]) - lse);
      }
      tail[r] = s;
    }
  });
  return c;
}

TokenLogitStats CompareCompact(const CompactLogits& base, const at::Tensor& logits, const at::Tensor& tokens) {
  PC_CHECK(logits.dim() == 3 && logits.size(0) == base.nll.size(0) && logits.size(1) == base.nll.size(1) + 1,
           "kld: the model's logits ", ShapeString(logits.sizes()), " do not match the base's windows ",
           ShapeString(base.nll.sizes()), " (+1 token)");
  const int64_t B = logits.size(0), T = logits.size(1), V = logits.size(2), k = base.k();
  TokenLogitStats s;
  s.nll_ref = base.nll;
  ModelTokenStats(logits, tokens, base.top1.to(at::kLong), s);
  const at::Tensor y = logits.to(at::kFloat).contiguous();  // (B, T, V)
  const at::Tensor ids_t = base.top_ids.contiguous(), lp_t = base.top_logp.contiguous(),
                   tail_t = base.tail_mass.contiguous();
  const float* py = y.data_ptr<float>();
  const int32_t* ids = ids_t.data_ptr<int32_t>();
  const double* lp = lp_t.data_ptr<double>();
  const double* tail = tail_t.data_ptr<double>();
  s.kl = at::empty({B, T - 1}, at::kDouble);
  s.kl_upper = at::empty({B, T - 1}, at::kDouble);
  double* lo = s.kl.data_ptr<double>();
  double* hi = s.kl_upper.data_ptr<double>();
  at::parallel_for(0, B * (T - 1), std::max<int64_t>(1, 65536 / V), [&](int64_t begin, int64_t end) {
    std::vector<char> top(static_cast<size_t>(V));
    std::vector<double> rest;  // the model's log-probabilities of the tokens outside the top k
    rest.reserve(static_cast<size_t>(V));
    for (int64_t r = begin; r < end; ++r) {
      const float* row = py + RowOffset(r, T, V);
      const double lse = LogSumExp(row, V);
      std::fill(top.begin(), top.end(), 0);
      // The top-k part, exact: Σ_j p_j (log p_j − log q_j).
      double a = 0;
      for (int64_t j = 0; j < k; ++j) {
        const int32_t id = ids[r * k + j];
        top[id] = 1;
        const double lpj = lp[r * k + j];
        a += std::exp(lpj) * (lpj - (static_cast<double>(row[id]) - lse));
      }
      rest.clear();
      double q_rest = 0;
      for (int64_t v = 0; v < V; ++v) {
        if (top[v]) continue;
        const double lq = static_cast<double>(row[v]) - lse;
        rest.push_back(lq);
        q_rest += std::exp(lq);
      }
      const double m = tail[r];
      if (m <= 0 || rest.empty()) {
        lo[r] = hi[r] = a;
        continue;
      }
      // Lower: the rest as one outcome, m log(m / q_rest).
      lo[r] = a + m * (std::log(m) - std::log(q_rest));
      // Upper: the maximum of Σ_{v∉S} p_v (log p_v − log q_v) over 0 <= p_v <= p_k, Σ p_v = m. The
      // function is convex, so the maximum is at a vertex: n = ⌊m / p_k⌋ tokens at p_k and one at
      // f = m − n·p_k, placed on the tokens the model finds least probable.
      const double pk = std::exp(lp[r * k + k - 1]);
      const int64_t size = static_cast<int64_t>(rest.size());
      int64_t n = static_cast<int64_t>(std::floor(m / pk));
      double f = m - static_cast<double>(n) * pk;
      if (n >= size) {  // only by rounding: every rest token at p_k
        n = size;
        f = 0;
      }
      if (n < size) std::nth_element(rest.begin(), rest.begin() + n, rest.end());
      double g = 0;
      for (int64_t i = 0; i < n; ++i) g -= rest[i];
      double u = static_cast<double>(n) * pk * std::log(pk) + pk * g;
      if (f > 0) u += f * (std::log(f) - rest[n]);
      hi[r] = a + u;
    }
  });
  return s;
}

std::vector<int64_t> TokenizerProbe(const Tokenizer& tokenizer) {
  std::vector<int32_t> ids = tokenizer.EncodeWithSpecial(kProbeText);
  std::vector<int64_t> out(ids.begin(), ids.end());
  out.push_back(tokenizer.vocab_size());
  return out;
}

std::string PairsSha256(const std::vector<MinimalPair>& pairs, const std::string& prefix) {
  Sha256 h;
  h.Update("prefix\n" + prefix + "\n");
  for (const auto& p : pairs) h.Update(std::to_string(p.good.size()) + ":" + p.good + std::to_string(p.bad.size()) + ":" + p.bad);
  return h.HexDigest();
}

KldBase ComputeKldBase(Model& model, const Tokenizer& tokenizer, const at::Tensor& windows, int64_t top_k,
                       int64_t batch, const std::vector<MinimalPair>& pairs, const PairScoringOptions& scoring) {
  PC_CHECK(windows.dim() == 2 && windows.size(0) > 0 && windows.size(1) >= 2,
           "kld: expected at least one window of at least 2 tokens");
  const int64_t W = windows.size(0), T = windows.size(1);
  if (batch <= 0) batch = DefaultEvalBatch(model, T);
  KldBase b;
  b.vocab = model.config().vocab_size;
  b.tokens = windows.to(at::kLong).contiguous();
  b.tokens_sha256 = TokensSha256(b.tokens);
  b.tokenizer_probe = TokenizerProbe(tokenizer);
  std::vector<CompactLogits> parts;
  at::NoGradGuard no_grad;
  Progress progress("kld", W, "windows");
  for (int64_t w0 = 0; w0 < W; w0 += batch) {
    const int64_t n = std::min(batch, W - w0);
    at::Tensor tokens = b.tokens.narrow(0, w0, n).contiguous();
    parts.push_back(CompactFromLogits(model.Forward(tokens), tokens, top_k));
    progress.Add(n);
  }
  progress.Finish();
  auto cat = [&](at::Tensor CompactLogits::*field) {
    std::vector<at::Tensor> v;
    for (const auto& p : parts) v.push_back(p.*field);
    return at::cat(v, 0).contiguous();
  };
  b.logits = {cat(&CompactLogits::top_ids), cat(&CompactLogits::top_logp), cat(&CompactLogits::tail_mass),
              cat(&CompactLogits::nll), cat(&CompactLogits::top1)};
  if (!pairs.empty()) {
    std::vector<PairScore> scores = ScoreMinimalPairs(model, tokenizer, pairs, scoring);
    b.pairs = static_cast<int64_t>(pairs.size());
    b.pairs_sha256 = PairsSha256(pairs, scoring.prefix);
    b.pair_prefix = scoring.prefix;
    for (const auto& s : scores) {
      b.pair_logp_good.push_back(s.logp_good);
      b.pair_logp_bad.push_back(s.logp_bad);
    }
  }
  return b;
}

void WriteKldBase(const std::string& path, const KldBase& b, bool overwrite) {
  store::StagedWriter out = store::File::CreateStaged(path, store::kind::kKldBase, overwrite, "--save-base");
  const store::Group g = out.root();
  const int64_t W = b.tokens.size(0), T = b.tokens.size(1), k = b.logits.k();
  g.SetAttr("kld_base_version", kKldBaseVersion);
  g.SetAttr("model", b.model);
  g.SetAttr("dtype", b.dtype);
  g.SetAttr("vocab", b.vocab);
  g.SetAttr("windows", W);
  g.SetAttr("seq_len", T);
  g.SetAttr("top_k", k);
  g.SetAttr("tokens_sha256", b.tokens_sha256);
  g.SetAttr("text_sha256", b.text_sha256);
  g.SetAttr("text", b.text_path);
  g.SetAttr("pairs", b.pairs);
  g.SetAttr("pairs_sha256", b.pairs_sha256);
  g.SetAttr("pair_prefix", b.pair_prefix);
  g.SetAttr("content_sha256", ContentSha256(b));
  const store::WriteOptions z = store::WriteOptions::Compressed();
  g.WriteArray("tokens", b.tokens.data_ptr<int64_t>(), {W, T}, z);
  g.WriteVector("tokenizer_probe", b.tokenizer_probe);
  const CompactLogits& c = b.logits;
  const at::Tensor ids = c.top_ids.contiguous(), lp = c.top_logp.contiguous(), tail = c.tail_mass.contiguous(),
                   nll = c.nll.contiguous(), top1 = c.top1.contiguous();
  g.WriteArray("top_ids", ids.data_ptr<int32_t>(), {W, T - 1, k}, z);
  g.WriteArray("top_logp", lp.data_ptr<double>(), {W, T - 1, k}, z);
  g.WriteArray("tail_mass", tail.data_ptr<double>(), {W, T - 1}, z);
  g.WriteArray("nll", nll.data_ptr<double>(), {W, T - 1}, z);
  g.WriteArray("top1", top1.data_ptr<int32_t>(), {W, T - 1}, z);
  g.WriteArray("pair_logp_good", b.pair_logp_good.data(), {b.pairs}, z);
  g.WriteArray("pair_logp_bad", b.pair_logp_bad.data(), {b.pairs}, z);
  out.Commit();
}

KldBase ReadKldBase(const std::string& path) {
  store::File file = store::OpenUntrusted(path, store::kind::kKldBase);
  const store::Group g = file.root();
  const int64_t version = g.GetAttr<int64_t>("kld_base_version");
  PC_CHECK(version == kKldBaseVersion, "'", path, "': a kld-base file of version ", version, "; this perpcomp reads ",
           kKldBaseVersion);
  KldBase b;
  b.model = g.GetAttr<std::string>("model");
  b.dtype = g.GetAttr<std::string>("dtype");
  b.vocab = g.GetAttr<int64_t>("vocab");
  const int64_t W = g.GetAttr<int64_t>("windows"), T = g.GetAttr<int64_t>("seq_len"), k = g.GetAttr<int64_t>("top_k");
  PC_CHECK(W >= 1 && T >= 2 && b.vocab >= 1 && k >= 1 && k <= b.vocab, "'", path, "': inconsistent sizes (windows ",
           W, ", seq_len ", T, ", vocab ", b.vocab, ", top_k ", k, ")");
  b.tokens_sha256 = g.GetAttr<std::string>("tokens_sha256");
  b.text_sha256 = g.GetAttr<std::string>("text_sha256");
  b.text_path = g.GetAttr<std::string>("text");
  b.pairs = g.GetAttr<int64_t>("pairs");
  PC_CHECK(b.pairs >= 0, "'", path, "': negative pair count");
  b.pairs_sha256 = g.GetAttr<std::string>("pairs_sha256");
  b.pair_prefix = g.GetAttr<std::string>("pair_prefix");
  b.tokens = ToTensor(g.ReadArray<int64_t>("tokens", {W, T}), at::kLong);
  b.tokenizer_probe = g.ReadVector<int64_t>("tokenizer_probe");
  b.logits.top_ids = ToTensor(g.ReadArray<int32_t>("top_ids", {W, T - 1, k}), at::kInt);
  b.logits.top_logp = ToTensor(g.ReadArray<double>("top_logp", {W, T - 1, k}), at::kDouble);
  b.logits.tail_mass = ToTensor(g.ReadArray<double>("tail_mass", {W, T - 1}), at::kDouble);
  b.logits.nll = ToTensor(g.ReadArray<double>("nll", {W, T - 1}), at::kDouble);
  b.logits.top1 = ToTensor(g.ReadArray<int32_t>("top1", {W, T - 1}), at::kInt);
  b.pair_logp_good = g.ReadVector<double>("pair_logp_good", b.pairs);
  b.pair_logp_bad = g.ReadVector<double>("pair_logp_bad", b.pairs);
  PC_CHECK(ContentSha256(b) == g.GetAttr<std::string>("content_sha256"), "the kld base file '", path,
           "' is damaged: its arrays do not match their content_sha256; save it again with --save-base");
  PC_CHECK(TokensSha256(b.tokens) == b.tokens_sha256, "the kld base file '", path,
           "' is damaged: its tokens do not match tokens_sha256");
  auto in_vocab = [&](const at::Tensor& ids) { return ids.min().item<int64_t>() >= 0 && ids.max().item<int64_t>() < b.vocab; };
  PC_CHECK(in_vocab(b.tokens) && in_vocab(b.logits.top_ids) && in_vocab(b.logits.top1), "'", path,
           "': token ids outside the vocabulary of ", b.vocab);
  return b;
}

void CheckKldCompatible(const KldBase& base, const std::string& base_path, const ModelConfig& config,
                        const Tokenizer& tokenizer, const std::string& model_name) {
  PC_CHECK(config.vocab_size == base.vocab, model_name, " has a vocabulary of ", config.vocab_size,
           " tokens, but the base file '", base_path, "' was saved from '", base.model, "' with ", base.vocab,
           ": a KL needs the same vocabulary");
  const std::vector<int64_t> probe = TokenizerProbe(tokenizer);
  if (probe != base.tokenizer_probe) {
    size_t i = 0;
    while (i < probe.size() && i < base.tokenizer_probe.size() && probe[i] == base.tokenizer_probe[i]) ++i;
    PC_CHECK(false, model_name, "'s tokenizer reads text differently from the tokenizer the base file '", base_path,
             "' was saved with (probe text: first difference at id ", i, "); the same token ids mean different text");
  }
  PC_CHECK(config.max_pos <= 0 || base.tokens.size(1) <= config.max_pos, model_name, " has a context of ",
           config.max_pos, " tokens, shorter than the base file's windows of ", base.tokens.size(1));
}

void CheckKldTokens(const KldBase& base, const std::string& base_path, const at::Tensor& windows,
                    const std::string& text_path) {
  PC_CHECK(windows.sizes() == base.tokens.sizes() && TokensSha256(windows) == base.tokens_sha256, "'", text_path,
           "' gives other token windows ", ShapeString(windows.sizes()), " than the base file '", base_path,
           "' was saved with ", ShapeString(base.tokens.sizes()), " from '", base.text_path,
           "' (tokens sha256 differ): give the same text, --seq-len and --max-windows, or omit --text");
}

PairFlips CountPairFlips(const std::vector<double>& base_good, const std::vector<double>& base_bad,
                         const std::vector<PairScore>& model) {
  PC_ASSERT(base_good.size() == model.size() && base_bad.size() == model.size(), "pair counts differ");
  PairFlips f;
  f.pairs = static_cast<int64_t>(model.size());
  for (size_t i = 0; i < model.size(); ++i) {
    const bool before = base_good[i] > base_bad[i], after = model[i].correct();
    f.base_correct += before;
    f.model_correct += after;
    f.right_to_wrong += before && !after;
    f.wrong_to_right += !before && after;
  }
  if (f.pairs > 0) {
    f.base_accuracy = static_cast<double>(f.base_correct) / static_cast<double>(f.pairs);
    f.accuracy = static_cast<double>(f.model_correct) / static_cast<double>(f.pairs);
  }
  return f;
}

KldResult EvaluateKld(Model& model, const Tokenizer& tokenizer, const KldBase& base, const std::string& base_path,
                      int64_t batch, const std::vector<MinimalPair>& pairs, const PairScoringOptions& scoring) {
  const int64_t W = base.tokens.size(0), T = base.tokens.size(1);
  if (batch <= 0) batch = DefaultEvalBatch(model, T);
  if (!pairs.empty()) {
    PC_CHECK(base.pairs > 0, "--pairs: the base file '", base_path, "' was saved without minimal pairs");
    PC_CHECK(PairsSha256(pairs, scoring.prefix) == base.pairs_sha256, "--pairs: these ", pairs.size(),
             " pairs (prefix \"", scoring.prefix, "\") are not the ", base.pairs, " pairs (prefix \"", base.pair_prefix,
             "\") the base file '", base_path, "' was scored on");
  }
  KldResult res;
  DownstreamAccumulator acc;
  at::NoGradGuard no_grad;
  Progress progress("kld", W, "windows");
  for (int64_t w0 = 0; w0 < W; w0 += batch) {
    const int64_t n = std::min(batch, W - w0);
    at::Tensor tokens = base.tokens.narrow(0, w0, n).contiguous();
    acc.Add(CompareCompact(base.logits.Narrow(w0, n), model.Forward(tokens), tokens));
    progress.Add(n);
  }
  progress.Finish();
  res.downstream = acc.Finish();
  PC_CHECK(std::isfinite(res.downstream.mean_nll), "kld: the mean NLL is not finite (", res.downstream.mean_nll,
           "); the model produced non-finite logits");
  if (!pairs.empty()) {
    res.has_pairs = true;
    res.flips = CountPairFlips(base.pair_logp_good, base.pair_logp_bad, ScoreMinimalPairs(model, tokenizer, pairs, scoring));
  }
  return res;
}

}  // namespace pc
