#include "metrics/measure.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include "core/error.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/strings.h"
#include "core/tensor_util.h"
#include "metrics/block_stream.h"
#include "metrics/perplexity.h"
#include "model/sizes.h"
#include "metrics/split_rows.h"

namespace pc {
namespace {

// The MLP reads the block input itself (GPT-NeoX parallel residual): its local run is the one
// inside the local block run.
bool MlpSharesInput(const ModelConfig& c) { return c.pre_norm && c.parallel_residual; }

std::string LayerItem(int layer, const std::string& what) { return std::to_string(layer) + "." + what; }

// The reference's tensors of one block for a batch, (B, T, features) in the compute dtype.
struct RefLayer {
  at::Tensor input;                    // block input h
  std::vector<at::Tensor> linear_out;  // per linear index
  at::Tensor attn_update, mlp_update;  // Δ
  at::Tensor mlp_input;                // residual entering the MLP (== input when shared)
  at::Tensor output;                   // block output
};

struct RefHead {
  at::Tensor final_norm;  // (B, T, d), undefined when the model has no final norm
  at::Tensor logits;      // (B, T, V) float32
};

// Captures what the reference computes at every measured site.
class CaptureHook : public ForwardHooks {
 public:
  RefLayer* layer = nullptr;
  RefHead* head = nullptr;

  bool Wants(SiteKind k) const override {
    return k == SiteKind::kLinearOutput || k == SiteKind::kAttnUpdate || k == SiteKind::kMlpUpdate ||
           k == SiteKind::kBlockOutput || k == SiteKind::kFinalNorm || k == SiteKind::kLogits;
  }
  at::Tensor At(const Site& s, const at::Tensor& x, const at::Tensor& incoming) override {
    switch (s.kind) {
      case SiteKind::kLinearOutput: layer->linear_out.at(s.index) = x; break;
      case SiteKind::kAttnUpdate: layer->attn_update = x; break;
      case SiteKind::kMlpUpdate:
        layer->mlp_update = x;
        layer->mlp_input = incoming;
        break;
      case SiteKind::kBlockOutput: layer->output = x; break;
      case SiteKind::kFinalNorm: head->final_norm = x; break;
      case SiteKind::kLogits: head->logits = x; break;
      default: break;
    }
    return x;
  }
};

// The reference, block by block over every batch of windows: read from a complete cache, or
// computed live (and written to the cache parts that are missing). Keeps each batch's residual
// stream (the input of the next block).
class ReferenceSource {
 public:
  ReferenceSource(Model& ref, const at::Tensor& windows, int64_t batch, const CacheLayout& layout,
                  CachePartReader* sites, CachePartReader* logits, CachePartWriter* sites_out,
                  CachePartWriter* logits_out)
      : stream_(ref, windows, batch), layout_(layout), sites_(sites), logits_(logits), sites_out_(sites_out),
        logits_out_(logits_out) {
    live_ = sites_ == nullptr || logits_ == nullptr;
  }

  bool live() const { return live_; }

  void Embed(bool release) {
    if (live_) stream_.Embed(release);
    for (int64_t b = 0; b < stream_.batches(); ++b) {
      if (live_) {
        Put(b, "embed", stream_.hidden(b));
      } else {
        stream_.hidden(b) = Get(b, "embed");
      }
    }
  }

  // Block l of batch b (block l of the reference resident when live).
  RefLayer Layer(int l, int64_t b) {
    Model& ref = stream_.model();
    at::Tensor& hidden = stream_.hidden(b);
    RefLayer r;
    r.input = hidden;
    const int nlin = static_cast<int>(ref.arch().linears.size());
    r.linear_out.resize(nlin);
    const bool shares = MlpSharesInput(ref.config());
    if (live_) {
      CaptureHook hook;
      hook.layer = &r;
      ForwardContext& ctx = stream_.context();
      ctx.hooks = &hook;
      ref.BlockForward(l, hidden, ctx);
      ctx.hooks = nullptr;
      for (int i = 0; i < nlin; ++i) Put(b, LayerItem(l, "lin." + std::to_string(i)), r.linear_out[i]);
      Put(b, LayerItem(l, "attn_update"), r.attn_update);
      Put(b, LayerItem(l, "mlp_update"), r.mlp_update);
      if (!shares) Put(b, LayerItem(l, "mlp_input"), r.mlp_input);
      Put(b, LayerItem(l, "output"), r.output);
    } else {
      for (int i = 0; i < nlin; ++i) r.linear_out[i] = Get(b, LayerItem(l, "lin." + std::to_string(i)));
      r.attn_update = Get(b, LayerItem(l, "attn_update"));
      r.mlp_update = Get(b, LayerItem(l, "mlp_update"));
      if (!shares) r.mlp_input = Get(b, LayerItem(l, "mlp_input"));
      r.output = Get(b, LayerItem(l, "output"));
    }
    if (shares) r.mlp_input = r.input;
    hidden = r.output;
    return r;
  }

  // The reference's last hidden state of batch b (input of the head).
  const at::Tensor& hidden(int64_t b) { return stream_.hidden(b); }

  RefHead Head(int64_t b) {
    RefHead h;
    if (live_) {
      CaptureHook hook;
      hook.head = &h;
      ForwardContext& ctx = stream_.context();
      ctx.hooks = &hook;
      h.logits = stream_.Logits(b);
      ctx.hooks = nullptr;
      if (h.final_norm.defined()) Put(b, "final_norm", h.final_norm);
      if (logits_out_ != nullptr) logits_out_->Write(0, stream_.first(b), h.logits);
    } else {
      if (stream_.model().config().has_final_norm) h.final_norm = Get(b, "final_norm");
      h.logits = logits_->Read(0, stream_.first(b), stream_.count(b));
    }
    return h;
  }

  // Makes the written cache parts visible; returns whether anything was written.
  bool Commit() {
    bool wrote = false;
    for (CachePartWriter* w : {sites_out_, logits_out_}) {
      if (w != nullptr) {
        w->Commit();
        wrote = true;
      }
    }
    return wrote;
  }

 private:
  void Put(int64_t b, const std::string& item, const at::Tensor& t) {
    if (sites_out_ != nullptr) sites_out_->Write(layout_.Find(item), stream_.first(b), t);
  }
  at::Tensor Get(int64_t b, const std::string& item) {
    return sites_->Read(layout_.Find(item), stream_.first(b), stream_.count(b));
  }

  BlockStream stream_;
  const CacheLayout& layout_;
  CachePartReader* sites_;
  CachePartReader* logits_;
  CachePartWriter* sites_out_;
  CachePartWriter* logits_out_;
  bool live_ = true;
};

// Compares the compressed model's tensors with the reference's at every site it is told to
// look at; observes only.
class CompareHook : public ForwardHooks {
 public:
  // out_scales[layer][linear index]: the factor (out,) the compressed model's method folded into
  // that linear's output rows (undefined: none); its output is compared with the reference's
  // output times it (model/folded_scales.h).
  CompareHook(const SiteIndex& index, std::vector<SiteAccumulator>& acc, PerTokenValues* per_token,
              std::vector<std::vector<at::Tensor>> out_scales)
      : index_(index), acc_(acc), per_token_(per_token), out_scales_(std::move(out_scales)) {}

  // Which sites the next forward call is compared at, against what, as which kind.
  // The input of the block the next forward runs (for its block update), and the window length.
  void SetBlockInput(const at::Tensor& h) { block_input_ = h; }
  void SetPeriod(int64_t tokens_per_window) { period_ = tokens_per_window; }

  void Configure(ErrorKind kind, const RefLayer* layer, const RefHead* head, bool attention, bool mlp, bool block,
                 int64_t token_offset) {
    kind_ = kind;
    layer_ = layer;
    head_ = head;
    attention_ = attention;
    mlp_ = mlp;
    block_ = block;
    offset_ = token_offset;
  }

  bool Wants(SiteKind k) const override {
    return k == SiteKind::kLinearOutput || k == SiteKind::kAttnUpdate || k == SiteKind::kMlpUpdate ||
           k == SiteKind::kBlockOutput || k == SiteKind::kFinalNorm || k == SiteKind::kLogits;
  }

  at::Tensor At(const Site& s, const at::Tensor& x, const at::Tensor& incoming) override {
    switch (s.kind) {
      case SiteKind::kLinearOutput: {
        int e = index_.Find(SiteType::kLinear, s.layer, s.index, kind_, Frame::kSelf);
        PC_ASSERT(e >= 0 && layer_ != nullptr, "no site for linear ", s.index, " of layer ", s.layer);
        bool attention = IsAttentionRole(index_.entries()[e].role);
        if ((attention && attention_) || (!attention && mlp_)) {
          const at::Tensor& scale = out_scales_.at(s.layer).at(s.index);
          const at::Tensor& ref = layer_->linear_out[s.index];
          Self(e, x, scale.defined() ? (ref * scale.to(ref.scalar_type())).to(ref.scalar_type()) : ref);
        }
        break;
      }
      case SiteKind::kAttnUpdate:
        if (attention_) Update(SiteType::kAttnUpdate, s.layer, x, layer_->attn_update, layer_->input);
        break;
      case SiteKind::kMlpUpdate:
        if (mlp_) Update(SiteType::kMlpUpdate, s.layer, x, layer_->mlp_update, layer_->mlp_input);
        break;
      case SiteKind::kBlockOutput:
        if (block_) {
          Self(index_.Find(SiteType::kBlockOutput, s.layer, -1, kind_, Frame::kSelf), x, layer_->output);
          // The whole block update against the reference's: Δ̂ = out − in, Δ = out_ref − in_ref.
          PC_ASSERT(block_input_.defined(), "block update of layer ", s.layer, " without the block's input");
          Self(index_.Find(SiteType::kBlockUpdate, s.layer, -1, kind_, Frame::kSelf), x - block_input_,
               layer_->output - layer_->input);
        }
        break;
      case SiteKind::kFinalNorm:
        if (head_ != nullptr) Self(index_.Find(SiteType::kFinalNorm, -1, -1, kind_, Frame::kSelf), x, head_->final_norm);
        break;
      case SiteKind::kLogits:
        if (head_ != nullptr) Self(index_.Find(SiteType::kLogits, -1, -1, kind_, Frame::kSelf), x, head_->logits);
        break;
      default: break;
    }
    return x;
  }

 private:
  void Self(int entry, const at::Tensor& out, const at::Tensor& ref) {
    PC_ASSERT(entry >= 0 && ref.defined(), "site entry ", entry, " has no reference tensor");
    Record(entry, SplitRows(out, ref), false);
  }

  // Frame "self" (against Δ) and frame "incoming" (e = Δ̂ − Δ along the reference's h).
  void Update(SiteType type, int layer, const at::Tensor& out, const at::Tensor& ref, const at::Tensor& h) {
    Self(index_.Find(type, layer, -1, kind_, Frame::kSelf), out, ref);
    int e = index_.Find(type, layer, -1, kind_, Frame::kIncoming);
    PC_ASSERT(e >= 0 && h.defined(), "no incoming-frame site for layer ", layer);
    Record(e, SplitRows(out, ref, h), true);
  }

  void Record(int entry, const RowSplit& s, bool incoming) {
    acc_[entry].Add(s, incoming, period_);
    if (per_token_ == nullptr) return;
    PerTokenValues& pt = *per_token_;
    const int64_t n = s.rows();
    const int64_t base = static_cast<int64_t>(entry) * pt.windows * pt.seq_len + offset_;
    PC_ASSERT(offset_ + n <= pt.windows * pt.seq_len, "per-token offset");
    const double* iso = s.iso.data_ptr<double>();
    const double* par = s.par.data_ptr<double>();
    const double* perp = s.perp.data_ptr<double>();
    const double* p = s.p.data_ptr<double>();
    const double* ref_sq = s.ref_sq.data_ptr<double>();
    for (int64_t i = 0; i < n; ++i) {
      TokenValues v = TokenValuesAt(s, i, incoming);
      const int64_t k = base + i;
      pt.iso[k] = static_cast<float>(iso[i]);
      pt.par[k] = static_cast<float>(par[i]);
      pt.perp[k] = static_cast<float>(perp[i]);
      pt.p[k] = static_cast<float>(p[i]);
      pt.ref_sq[k] = static_cast<float>(ref_sq[i]);
      pt.cos[k] = v.valid ? static_cast<float>(v.cos) : 0.0f;
      pt.norm_ratio[k] = v.valid ? static_cast<float>(v.norm_ratio) : 0.0f;
      pt.valid[k] = v.valid ? 1 : 0;
    }
  }

  const SiteIndex& index_;
  std::vector<SiteAccumulator>& acc_;
  PerTokenValues* per_token_;
  std::vector<std::vector<at::Tensor>> out_scales_;
  at::Tensor block_input_;
  int64_t period_ = 0;
  ErrorKind kind_ = ErrorKind::kAccumulated;
  const RefLayer* layer_ = nullptr;
  const RefHead* head_ = nullptr;
  bool attention_ = false, mlp_ = false, block_ = false;
  int64_t offset_ = 0;
};

void AllocatePerToken(PerTokenValues& pt, int64_t entries, int64_t windows, int64_t seq_len) {
  pt.entries = entries;
  pt.windows = windows;
  pt.seq_len = seq_len;
  const size_t n = static_cast<size_t>(entries * windows * seq_len);
  for (auto* v : {&pt.iso, &pt.par, &pt.perp, &pt.p, &pt.ref_sq, &pt.cos, &pt.norm_ratio}) v->assign(n, 0.0f);
  pt.valid.assign(n, 0);
  const size_t m = static_cast<size_t>(windows * (seq_len - 1));
  for (auto* v : {&pt.nll_ref, &pt.nll, &pt.kl}) v->assign(m, 0.0f);
  pt.top1.assign(m, 0);
}

void CopyPredictions(const TokenLogitStats& s, int64_t first_window, PerTokenValues& pt) {
  const int64_t offset = first_window * (pt.seq_len - 1);
  auto copy = [&](const at::Tensor& t, std::vector<float>& dst) {
    at::Tensor c = t.to(at::kFloat).contiguous();
    std::copy(c.data_ptr<float>(), c.data_ptr<float>() + c.numel(), dst.begin() + offset);
  };
  copy(s.nll_ref, pt.nll_ref);
  copy(s.nll, pt.nll);
  copy(s.kl, pt.kl);
  at::Tensor t = s.top1.contiguous();
  std::copy(t.data_ptr<uint8_t>(), t.data_ptr<uint8_t>() + t.numel(), pt.top1.begin() + offset);
}

}  // namespace

CacheLayout SitesLayout(const Model& model) {
  const ModelConfig& c = model.config();
  const at::ScalarType dt = model.compute_dtype();
  CacheLayout l;
  l.items.push_back({"embed", c.hidden, dt});
  for (int layer = 0; layer < model.num_layers(); ++layer) {
    const std::vector<LinearSpec>& linears = model.arch().linears;  // as Model::LoadBlock makes them
    for (size_t i = 0; i < linears.size(); ++i) {
      l.items.push_back({LayerItem(layer, "lin." + std::to_string(i)), BlockLinearDims(c, linears[i].role).out, dt});
    }
    l.items.push_back({LayerItem(layer, "attn_update"), c.hidden, dt});
    l.items.push_back({LayerItem(layer, "mlp_update"), c.hidden, dt});
    if (!MlpSharesInput(c)) l.items.push_back({LayerItem(layer, "mlp_input"), c.hidden, dt});
    l.items.push_back({LayerItem(layer, "output"), c.hidden, dt});
  }
  if (c.has_final_norm) l.items.push_back({"final_norm", c.hidden, dt});
  return l;
}

int64_t MeasureMemoryBytes(const Model& model, int64_t tokens, bool per_token) {
  const int64_t entries = SiteIndex(model).size();
  return entries * tokens * (kNumRelQuantities * 4 + (per_token ? 7 * 4 + 1 : 0));
}

MeasureResult Measure(Model& ref, Model& comp, const at::Tensor& windows, const MeasureOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  PC_CHECK(windows.dim() == 2 && windows.size(0) > 0 && windows.size(1) >= 2,
           "measure: expected at least one window of at least 2 tokens, got ", ShapeString(windows.sizes()));
  CheckSameArchitecture(ref, comp, o.reference_name, o.compressed_name);
  const int64_t W = windows.size(0), T = windows.size(1);
  const int64_t batch = o.batch > 0 ? o.batch : DefaultEvalBatch(ref, T);
  const ModelConfig& cfg = comp.config();
  SiteIndex index(comp);

  MeasureResult res;
  res.sites = index.entries();
  res.windows = W;
  res.seq_len = T;
  res.batch = batch;
  // The scales the compressed model's method folded into its weights on purpose (AWQ), from its
  // folder: not compression error.
  const FoldedScales folded = ReadFoldedScales(comp.source_dir());
  std::vector<std::vector<at::Tensor>> out_scales(comp.num_layers());
  for (const SiteEntry& e : index.entries()) {
    if (e.type != SiteType::kLinear || e.kind != ErrorKind::kAccumulated || e.frame != Frame::kSelf) continue;
    const at::Tensor* s = folded.Output(e.name);
    out_scales[e.layer].resize(std::max<size_t>(out_scales[e.layer].size(), e.index + 1));
    out_scales[e.layer][e.index] = s != nullptr ? *s : at::Tensor();
  }
  int64_t memory = MeasureMemoryBytes(comp, W * T, o.per_token);
  log::Info("measure", index.size(), " site entries over ", W, " x ", T, " tokens; per-token memory ",
            HumanBytes(static_cast<double>(memory)));

  // The reference cache.
  const CacheLayout sites_layout = SitesLayout(ref);
  const CacheLayout logits_layout = LogitsLayout(cfg.vocab_size);
  std::unique_ptr<CachePartReader> sites_in, logits_in;
  std::unique_ptr<CachePartWriter> sites_out, logits_out;
  if (!o.cache.dir.empty() && !ref.source_dir().empty()) {
    CacheKey key = MakeCacheKey(o.cache.dir, ref.source_dir(), ref.compute_dtype(), windows, o.text_sha256);
    res.cache_entry = CacheEntryDir(o.cache.dir, key);
    sites_in = CachePartReader::Open(res.cache_entry, "sites", key, sites_layout);
    logits_in = CachePartReader::Open(res.cache_entry, "logits", key, logits_layout);
    res.cache_hit = sites_in != nullptr && logits_in != nullptr;
    if (!res.cache_hit) {
      if (sites_in == nullptr && CacheHasRoom(o.cache, "activations", W * T * sites_layout.BytesPerToken())) {
        sites_out = std::make_unique<CachePartWriter>(res.cache_entry, "sites", key, sites_layout, batch);
      }
      if (logits_in == nullptr && CacheHasRoom(o.cache, "logits", W * T * logits_layout.BytesPerToken())) {
        logits_out = std::make_unique<CachePartWriter>(res.cache_entry, "logits", key, logits_layout, batch);
      }
    }
    log::Info("measure", "reference cache ", res.cache_hit ? "hit" : "miss", ": ", res.cache_entry);
  }
  ReferenceSource source(ref, windows, batch, sites_layout, sites_in.get(), logits_in.get(), sites_out.get(),
                         logits_out.get());

  std::vector<SiteAccumulator> acc(index.size());
  if (o.per_token) AllocatePerToken(res.per_token, index.size(), W, T);
  res.per_token_kept = o.per_token;
  CompareHook hook(index, acc, o.per_token ? &res.per_token : nullptr, std::move(out_scales));
  hook.SetPeriod(T);
  DownstreamAccumulator downstream;
  const bool shares = MlpSharesInput(cfg);

  // Block by block in lockstep (metrics/block_stream.h): block l of each model resident (the
  // reference's also on a cache hit, for the weight errors), every batch of windows run through
  // it; each site's accumulator sees the batches in window order, as a batch-by-batch run would.
  at::NoGradGuard no_grad;
  BlockStream stream(comp, windows, batch);  // the compressed model on its own residual stream
  ForwardContext& cc = stream.context();
  Progress progress("measure", comp.num_layers() + 1, "blocks");
  source.Embed(o.release_embeddings);
  stream.Embed(o.release_embeddings);
  cc.hooks = &hook;
  for (int l = 0; l < comp.num_layers(); ++l) {
    BlockHold ref_hold(ref, l), comp_hold(comp, l);
    std::vector<WeightError> weights = CompareBlockWeights(ref, comp, l, folded);
    res.weights.insert(res.weights.end(), weights.begin(), weights.end());
    for (int64_t b = 0; b < stream.batches(); ++b) {
      const int64_t offset = stream.first(b) * T;
      RefLayer r = source.Layer(l, b);
      at::Tensor& h = stream.hidden(b);
      hook.Configure(ErrorKind::kAccumulated, &r, nullptr, true, true, true, offset);
      hook.SetBlockInput(h);
      h = comp.BlockForward(l, h, cc);
      hook.Configure(ErrorKind::kLocal, &r, nullptr, true, shares, true, offset);
      hook.SetBlockInput(r.input);
      comp.BlockForward(l, r.input, cc);
      if (!shares) {
        hook.Configure(ErrorKind::kLocal, &r, nullptr, false, true, false, offset);
        comp.MlpUpdate(l, r.mlp_input, cc);
      }
    }
    progress.Add(1);
    if (o.after_block) o.after_block(l);
  }
  for (Model* m : {&ref, &comp}) {
    if (!m->tied() && !m->lm_head().weight.defined()) m->LoadHead();
  }
  res.weights.push_back(CompareHeadWeights(ref, comp, folded));
  for (int64_t b = 0; b < stream.batches(); ++b) {
    const int64_t offset = stream.first(b) * T;
    at::Tensor tokens = stream.tokens(b);
    RefHead rh = source.Head(b);
    hook.Configure(ErrorKind::kAccumulated, nullptr, &rh, false, false, false, offset);
    at::Tensor logits = stream.Logits(b);
    hook.Configure(ErrorKind::kLocal, nullptr, &rh, false, false, false, offset);
    comp.Head(source.hidden(b), cc);
    TokenLogitStats ls = CompareLogits(rh.logits, logits, tokens);
    downstream.Add(ls);
    if (o.per_token) CopyPredictions(ls, stream.first(b), res.per_token);
  }
  progress.Add(1);
  progress.Finish();
  res.cache_written = source.Commit();
  if (res.cache_written) log::Info("measure", "reference cached in ", res.cache_entry);

  res.aggregates.reserve(acc.size());
  for (const auto& a : acc) res.aggregates.push_back(a.Finish());
  res.downstream = downstream.Finish();
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return res;
}

}  // namespace pc
