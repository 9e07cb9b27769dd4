#include "model/model.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <random>
#include <set>

#include "core/directional.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/tensor_util.h"
#include "model/attention.h"
#include "model/rope.h"
#include "model/sizes.h"

namespace pc {

// ---- Block ----------------------------------------------------------------------------------

Linear* Block::Find(Role role) {
  int i = index_of[static_cast<int>(role)];
  return i < 0 ? nullptr : &linears[i];
}
const Linear* Block::Find(Role role) const {
  int i = index_of[static_cast<int>(role)];
  return i < 0 ? nullptr : &linears[i];
}
Linear& Block::Get(Role role) {
  Linear* l = Find(role);
  PC_ASSERT(l != nullptr, "block ", layer, " has no ", RoleName(role), " linear");
  return *l;
}

const char* SiteKindName(SiteKind k) {
  switch (k) {
    case SiteKind::kLinearInput: return "linear_input";
    case SiteKind::kLinearOutput: return "linear_output";
    case SiteKind::kNormOutput: return "norm_output";
    case SiteKind::kAttnUpdate: return "attn_update";
    case SiteKind::kMlpUpdate: return "mlp_update";
    case SiteKind::kBlockOutput: return "block_output";
    case SiteKind::kFinalNorm: return "final_norm";
    case SiteKind::kLogits: return "logits";
    case SiteKind::kCount: break;
  }
  return "?";
}

// ---- Loading --------------------------------------------------------------------------------

void Model::InitFromConfig() {
  const ModelConfig& c = config_;
  blocks_.clear();
  blocks_.resize(c.layers);
  for (int l = 0; l < c.layers; ++l) blocks_[l].layer = l;
  if (arch().pos == PosKind::kRope) {
    RopeFrequencies f = ComputeRope(c, c.max_pos);
    inv_freq_ = at::tensor(at::ArrayRef<double>(f.inv_freq), at::kDouble).to(at::kFloat);  // (rotary_dim/2,)
    rope_scaling_ = f.attention_scaling;
  }
}

at::Tensor Model::Fetch(const Getter& get, const std::string& name, std::vector<int64_t> shape, bool required,
                        bool conv1d) {
  at::Tensor raw = get(name, required);
  if (!raw.defined()) return raw;
  std::vector<int64_t> disk = shape;
  if (conv1d && disk.size() == 2) std::swap(disk[0], disk[1]);
  std::string where = source_dir_.empty() ? std::string("model") : "'" + source_dir_ + "'";
  PC_CHECK(raw.sizes().vec() == disk, where, ": tensor '", name, "' has shape ", ShapeString(raw.sizes()),
           ", expected ", ShapeString(disk), " from ", config_.where.empty() ? "the config" : config_.where,
           " (hidden ", config_.hidden, ", heads ", config_.heads, ", kv heads ", config_.kv_heads, ", head_dim ",
           config_.head_dim, ", intermediate ", config_.intermediate, ", vocab ", config_.vocab_size, ")");
  PC_CHECK(at::isFloatingType(raw.scalar_type()), where, ": tensor '", name, "' has dtype ",
           c10::toString(raw.scalar_type()), ", expected F32, F16 or BF16");
  if (check_finite_) {
    int64_t bad = FirstNonFinite(raw);
    PC_CHECK(bad < 0, where, ": tensor '", name, "' holds a non-finite value (",
             bad < 0 ? 0.0 : raw.reshape({-1})[bad].item<double>(), ") at flat index ", bad,
             "; refusing to load a model that would give NaN losses");
  }
  disk_dtype_[name] = FromScalarType(raw.scalar_type());
  at::Tensor t = conv1d ? raw.t() : raw;
  return t.to(dtype_).contiguous();
}

void Model::LoadTop(const Getter& get, bool head) {
  const ModelConfig& c = config_;
  const ArchSpec& a = arch();
  embed_ = Fetch(get, WeightOf(a.embed.hf), {c.vocab_size, c.embed_dim}, true, false);
  if (a.pos == PosKind::kLearned) {
    pos_embed_ = Fetch(get, WeightOf(a.pos_embed.hf), {c.max_pos + a.pos_offset, c.hidden}, true, false);
  }
  if (c.embed_dim != c.hidden) {
    PC_CHECK(a.project_in.present(), c.where, ": embedding width ", c.embed_dim, " differs from hidden ", c.hidden,
             " but ", a.model_type, " has no input projection");
    project_in_ = {a.project_in.hf, Role::kUp, Fetch(get, WeightOf(a.project_in.hf), {c.hidden, c.embed_dim}, true, false),
                   at::Tensor()};
    project_out_ = {a.project_out.hf, Role::kDown,
                    Fetch(get, WeightOf(a.project_out.hf), {c.embed_dim, c.hidden}, true, false), at::Tensor()};
  }
  if (c.has_final_norm) {
    final_norm_.name = a.final_norm.hf;
    final_norm_.weight = Fetch(get, WeightOf(final_norm_.name), {c.hidden}, true, false);
    if (a.norm == NormKind::kLayerNorm) final_norm_.bias = Fetch(get, BiasOf(final_norm_.name), {c.hidden}, true, false);
  }
  lm_head_.name = a.lm_head.hf;
  lm_head_.role = Role::kUp;
  if (c.tie_embeddings) {
    lm_head_.weight = embed_;  // shares storage
  } else if (head) {
    LoadHeadFrom(get);
  }
}

void Model::LoadHeadFrom(const Getter& get) {
  if (config_.tie_embeddings || lm_head_.weight.defined()) return;
  lm_head_.weight = Fetch(get, WeightOf(arch().lm_head.hf), {config_.vocab_size, config_.embed_dim}, true, false);
}

void Model::LoadHead() {
  PC_ASSERT(ckpt_ != nullptr || lm_head_.weight.defined(), "LoadHead needs a checkpoint");
  LoadHeadFrom(CheckpointGetter());
}

namespace {

// config.json's bias flag for a linear of this role, when it has one: attention_bias (q, k, v, qkv, o)
// or mlp_bias (gate, up, down) as Llama writes them, enable_bias (both) as OPT does. Returns the key
// and its value, or nullptr.
const char* BiasFlagKey(const nlohmann::json& raw, Role role) {
  const bool attention = role == Role::kQ || role == Role::kK || role == Role::kV || role == Role::kQKV || role == Role::kO;
  for (const char* key : {attention ? "attention_bias" : "mlp_bias", "enable_bias"}) {
    auto it = raw.find(key);
    if (it != raw.end() && it->is_boolean()) return key;
  }
  return nullptr;
}

}  // namespace

void Model::LoadBlockFrom(int layer, const Getter& get) {
  const ModelConfig& c = config_;
  const ArchSpec& a = arch();
  Block& b = blocks_[layer];
  b.linears.clear();
  b.index_of = Block::NoLinears();
  const int64_t d = c.hidden;
  for (const LinearSpec& spec : a.linears) {
    PC_CHECK(spec.role != Role::kQKV || c.kv_heads == c.heads, c.where,
             ": fused q/k/v requires as many key/value heads as heads");
    const LinearDims dims = BlockLinearDims(c, spec.role);
    const std::vector<int64_t> shape{dims.out, dims.in};
    Linear lin;
    lin.name = ExpandName(spec.name.hf, layer);
    lin.role = spec.role;
    lin.weight = Fetch(get, WeightOf(lin.name), shape, true, a.conv1d);
    if (spec.bias != BiasRule::kNone) {
      lin.bias = Fetch(get, BiasOf(lin.name), {shape[0]}, spec.bias == BiasRule::kRequired, false);
      // The checkpoint's tensors must agree with config.json's flag (transformers builds the model from the flag).
      if (const char* key = BiasFlagKey(c.raw, spec.role)) {
        const bool flag = c.raw[key].get<bool>();
        PC_CHECK(flag == lin.bias.defined(), c.where, ": config.json says ", key, " ", flag ? "true" : "false",
                 " but the checkpoint ", lin.bias.defined() ? "has" : "has no", " '", BiasOf(lin.name), "'",
                 "; make the flag and the tensors agree");
      }
    }
    b.index_of[static_cast<int>(spec.role)] = static_cast<int8_t>(b.linears.size());
    b.linears.push_back(std::move(lin));
  }
  auto load_norm = [&](Norm& n, const TensorName& pattern) {
    n.name = ExpandName(pattern.hf, layer);
    n.weight = Fetch(get, WeightOf(n.name), {d}, true, false);
    if (a.norm == NormKind::kLayerNorm) n.bias = Fetch(get, BiasOf(n.name), {d}, true, false);
  };
  load_norm(b.attn_norm, a.attn_norm);
  load_norm(b.mlp_norm, a.mlp_norm);
  if (a.qk_norm) {  // RMSNorm over each head's head_dim
    for (auto [n, pattern] : {std::pair<Norm*, const TensorName*>{&b.q_norm, &a.q_norm}, {&b.k_norm, &a.k_norm}}) {
      n->name = ExpandName(pattern->hf, layer);
      n->weight = Fetch(get, WeightOf(n->name), {c.head_dim}, true, false);
    }
  }
  b.act_scales_name = *a.act_scales ? ExpandName(a.act_scales, layer) : "";
  if (!b.act_scales_name.empty()) b.act_scales = Fetch(get, b.act_scales_name, {c.intermediate}, false, false);
  b.loaded = true;
}

Model::Getter Model::CheckpointGetter() const {
  std::shared_ptr<Checkpoint> ck = ckpt_;
  return [ck](const std::string& name, bool required) -> at::Tensor {
    if (!ck->Has(name)) {
      PC_CHECK(!required, "'", ck->dir(), "': missing tensor '", name, "'");
      return at::Tensor();
    }
    return ck->LoadRaw(name);  // a copy; its mapped pages are dropped as they are copied
  };
}

std::unique_ptr<Model> Model::Load(const std::string& dir, const LoadOptions& options) {
  std::unique_ptr<Model> m(new Model());
  m->config_ = LoadModelConfig(dir);
  m->dtype_ = options.dtype;
  m->compute_dtype_ = ComputeDType(options.dtype);
  m->check_finite_ = options.check_finite;
  m->source_dir_ = dir;
  m->ckpt_ = Checkpoint::Open(dir);
  m->InitFromConfig();
  Getter get = m->CheckpointGetter();
  m->LoadTop(get, options.load_head);
  if (options.load_blocks) {
    for (int l = 0; l < m->num_layers(); ++l) m->LoadBlockFrom(l, get);
    // Tensors nobody asked for: warn (a new architecture variant would otherwise be silently wrong).
    std::vector<std::string> unused;
    for (const auto& name : m->ckpt_->Names()) {
      if (m->disk_dtype_.count(name)) continue;
      bool ignorable = false;
      for (const char* suffix : m->arch().ignorable) {
        if (name.size() >= std::strlen(suffix) && name.compare(name.size() - std::strlen(suffix), std::string::npos, suffix) == 0) ignorable = true;
      }
      if (m->config_.tie_embeddings && name == WeightOf(m->arch().lm_head.hf)) ignorable = true;
      if (!ignorable) unused.push_back(name);
    }
    if (!unused.empty()) {
      log::Warn("model", "'", dir, "': ", unused.size(), " tensor(s) not used by the ", m->config_.model_type,
                " forward, e.g. '", unused[0], "'");
    }
  }
  return m;
}

std::unique_ptr<Model> Model::FromTensors(ModelConfig config, const std::map<std::string, at::Tensor>& tensors,
                                          at::ScalarType dtype, bool check_finite) {
  std::unique_ptr<Model> m(new Model());
  m->config_ = std::move(config);
  m->dtype_ = dtype;
  m->compute_dtype_ = ComputeDType(dtype);
  m->check_finite_ = check_finite;
  m->InitFromConfig();
  Getter get = [&tensors](const std::string& name, bool required) -> at::Tensor {
    auto it = tensors.find(name);
    if (it == tensors.end()) {
      PC_CHECK(!required, "missing tensor '", name, "'");
      return at::Tensor();
    }
    return it->second;
  };
  m->LoadTop(get, true);
  for (int l = 0; l < m->num_layers(); ++l) m->LoadBlockFrom(l, get);
  return m;
}

Block& Model::block(int layer) {
  PC_ASSERT(layer >= 0 && layer < num_layers(), "layer ", layer);
  return blocks_[layer];
}
const Block& Model::block(int layer) const {
  PC_ASSERT(layer >= 0 && layer < num_layers(), "layer ", layer);
  return blocks_[layer];
}

void Model::LoadBlock(int layer) {
  Block& b = block(layer);
  if (b.loaded) return;
  PC_ASSERT(ckpt_ != nullptr, "LoadBlock needs a checkpoint");
  LoadBlockFrom(layer, CheckpointGetter());
}

void Model::UnloadBlock(int layer) {
  Block& b = block(layer);
  if (!b.loaded) return;
  Block empty;
  empty.layer = layer;
  b = std::move(empty);
}

std::vector<Linear*> Model::Linears(bool include_lm_head) {
  std::vector<Linear*> out;
  for (auto& b : blocks_) {
    for (auto& l : b.linears) out.push_back(&l);
  }
  if (include_lm_head) out.push_back(&lm_head_);
  return out;
}

std::vector<at::Tensor> Model::Parameters() {
  std::vector<at::Tensor> out;
  auto add = [&](const at::Tensor& t) {
    if (t.defined()) out.push_back(t);
  };
  add(embed_);
  add(pos_embed_);
  add(project_in_.weight);
  add(project_out_.weight);
  add(final_norm_.weight);
  add(final_norm_.bias);
  if (!config_.tie_embeddings) {
    add(lm_head_.weight);
    add(lm_head_.bias);
  }
  for (auto& b : blocks_) {
    PC_ASSERT(b.loaded, "block ", b.layer, " is not loaded");
    for (const Norm* n : {&b.attn_norm, &b.mlp_norm, &b.q_norm, &b.k_norm}) {
      add(n->weight);
      add(n->bias);
    }
    for (auto& l : b.linears) {
      add(l.weight);
      add(l.bias);
    }
  }
  return out;
}

int64_t Model::ParameterCount() const {
  const ModelConfig& c = config_;
  int64_t n = c.vocab_size * c.embed_dim;
  if (pos_embed_.defined()) n += pos_embed_.numel();
  if (project_in_.weight.defined()) n += project_in_.weight.numel() + project_out_.weight.numel();
  if (final_norm_.weight.defined()) n += final_norm_.weight.numel() * (final_norm_.bias.defined() ? 2 : 1);
  if (!c.tie_embeddings) n += c.vocab_size * c.embed_dim;
  const int64_t d = c.hidden;
  int64_t per_block = 0;
  for (const auto& spec : arch().linears) {
    const LinearDims dims = BlockLinearDims(c, spec.role);
    per_block += dims.out * dims.in;
  }
  per_block += (arch().norm == NormKind::kLayerNorm ? 4 : 2) * d;
  if (arch().qk_norm) per_block += 2 * c.head_dim;
  n += per_block * c.layers;
  for (const auto& b : blocks_) {  // biases, where loaded
    for (const auto& l : b.linears) n += l.bias.defined() ? l.bias.numel() : 0;
  }
  return n;
}

// ---- Forward --------------------------------------------------------------------------------

ForwardContext Model::MakeContext(int64_t length, int64_t start, ForwardHooks* hooks, KvCache* cache) const {
  ForwardContext ctx;
  ctx.start = cache != nullptr ? cache->length : start;
  ctx.length = length;
  ctx.hooks = hooks;
  ctx.cache = cache;
  ctx.positions = at::arange(ctx.start, ctx.start + length, at::kLong);
  if (arch().pos == PosKind::kRope) {
    at::Tensor inv_freq = inv_freq_;
    const int64_t seq_len = ctx.start + length;
    if (RopeDependsOnLength(config_) && seq_len > config_.max_pos) {  // dynamic NTK (model/rope.h)
      inv_freq = at::tensor(at::ArrayRef<double>(ComputeRope(config_, seq_len).inv_freq), at::kDouble).to(at::kFloat);
    }
    at::Tensor freqs = at::outer(ctx.positions.to(at::kFloat), inv_freq);  // (T, rotary_dim/2)
    at::Tensor emb = at::cat({freqs, freqs}, -1);                           // (T, rotary_dim)
    at::Tensor cos = emb.cos(), sin = emb.sin();
    if (rope_scaling_ != 1.0) {
      cos = cos * rope_scaling_;
      sin = sin * rope_scaling_;
    }
    ctx.cos = cos.to(compute_dtype_);
    ctx.sin = sin.to(compute_dtype_);
  }
  return ctx;
}

KvCache Model::MakeCache(int64_t batch, int64_t capacity) const {
  KvCache cache;
  cache.capacity = capacity;
  for (int l = 0; l < config_.layers; ++l) {
    cache.k.push_back(at::zeros({batch, config_.kv_heads, capacity, config_.head_dim}, at::TensorOptions().dtype(compute_dtype_)));
    cache.v.push_back(at::zeros({batch, config_.kv_heads, capacity, config_.head_dim}, at::TensorOptions().dtype(compute_dtype_)));
  }
  return cache;
}

at::Tensor Model::Observe(SiteKind kind, int layer, int index, at::Tensor x, ForwardContext& ctx) {
  if (!ctx.Wants(kind)) return x;
  return ctx.hooks->At(Site{kind, layer, index}, x, at::Tensor());
}

at::Tensor Model::Update(SiteKind kind, int layer, at::Tensor delta, const at::Tensor& h, ForwardContext& ctx) {
  if (config_.parallel_scale != 1.0) delta = ScaleParallelPerp(delta, h, config_.parallel_scale, 1.0);
  if (!ctx.Wants(kind)) return delta;
  return ctx.hooks->At(Site{kind, layer, -1}, delta, h);
}

namespace {
// RMSNorm over the last dim as Hugging Face Llama: in float32, cast back, then scale.
at::Tensor RmsNorm(const at::Tensor& weight, const at::Tensor& x, double eps) {
  at::Tensor xf = x.to(at::kFloat);
  at::Tensor r = at::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps);
  return weight * (xf * r).to(x.scalar_type());
}
}  // namespace

at::Tensor Model::ApplyNorm(const Norm& n, const at::Tensor& x) const {
  if (arch().norm == NormKind::kLayerNorm) {
    return at::layer_norm(x, {x.size(-1)}, Compute(n.weight), Compute(n.bias), config_.norm_eps);
  }
  return RmsNorm(Compute(n.weight), x, config_.norm_eps);
}

at::Tensor Model::Compute(const at::Tensor& t) const {
  return !t.defined() || t.scalar_type() == compute_dtype_ ? t : t.to(compute_dtype_);
}

at::Tensor Model::ApplyLinear(const Block& b, int index, const at::Tensor& x, ForwardContext& ctx) {
  if (ctx.Wants(SiteKind::kLinearInput)) ctx.hooks->At(Site{SiteKind::kLinearInput, b.layer, index}, x, at::Tensor());
  const Linear& l = b.linears[index];
  if (ctx.stop_at_last_input && l.role == Role::kDown) return at::Tensor();  // the block's last linear
  at::Tensor y = at::linear(x, Compute(l.weight), Compute(l.bias));
  return Observe(SiteKind::kLinearOutput, b.layer, index, y, ctx);
}

namespace {
// Rotates the first rotary_dim dims of x (B, H, T, hd) by positions, halves convention.
at::Tensor ApplyRope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  const int64_t rd = cos.size(-1), hd = x.size(-1);
  at::Tensor xr = rd == hd ? x : x.narrow(-1, 0, rd);
  at::Tensor x1 = xr.narrow(-1, 0, rd / 2), x2 = xr.narrow(-1, rd / 2, rd / 2);
  at::Tensor rotated = at::cat({-x2, x1}, -1);
  at::Tensor out = xr * cos + rotated * sin;
  return rd == hd ? out : at::cat({out, x.narrow(-1, rd, hd - rd)}, -1);
}

at::Tensor Activate(Act act, const at::Tensor& x) {
  switch (act) {
    case Act::kSilu: return at::silu(x);
    case Act::kGeluErf: return at::gelu(x);
    case Act::kGeluTanh: return at::gelu(x, "tanh");
    case Act::kRelu: return at::relu(x);
  }
  return x;
}

std::atomic<int64_t> g_attention_chunk_bytes{kAttentionChunkBytes};

// Additive causal mask (n, S) for queries at `qpos` (n,) over keys 0 .. S−1: 0 where a key may be
// seen (key ≤ query, and within `window` positions when window > 0), −inf elsewhere.
at::Tensor AttentionMask(const at::Tensor& qpos, int64_t S, int64_t window, at::ScalarType dtype) {
  const int64_t n = qpos.size(0);
  at::Tensor q = qpos.view({n, 1}), kpos = at::arange(0, S, at::kLong).view({1, S});
  at::Tensor allowed = kpos <= q;
  if (window > 0) allowed = allowed.logical_and(kpos > q - window);
  at::Tensor mask = at::zeros({n, S}, at::TensorOptions().dtype(dtype));
  mask.masked_fill_(allowed.logical_not(), -std::numeric_limits<float>::infinity());
  return mask;
}

// Softmax over the keys. For bfloat16 scores LibTorch's CPU kernel accumulates in float32 and
// rounds each probability once: the values of a float32 softmax rounded to bfloat16 (transformers'
// eager attention), without a float32 copy of the scores.
at::Tensor Softmax(const at::Tensor& scores) { return at::softmax(scores, -1); }

// The additive mask (n, n) of the last n keys for a chunk of n queries whose positions are those
// keys' positions (queries t0 .. t0+n−1 of a causal forward without a sliding window): 0 on and
// below the diagonal, −inf above. Every earlier key is visible to every query of the chunk.
// Cached in the context per n: the chunks of a forward share it across layers.
const at::Tensor& CausalTail(ForwardContext& ctx, int64_t n, at::ScalarType dtype) {
  auto it = ctx.causal_tails.find(n);
  if (it == ctx.causal_tails.end()) {
    at::Tensor tail = at::full({n, n}, -std::numeric_limits<float>::infinity(), at::TensorOptions().dtype(dtype));
    it = ctx.causal_tails.emplace(n, tail.triu_(1)).first;
  }
  return it->second;
}
}  // namespace

void SetAttentionChunkBytes(int64_t bytes) {
  PC_ASSERT(bytes > 0, "attention chunk bytes must be positive");
  g_attention_chunk_bytes = bytes;
}
int64_t AttentionChunkBytes() { return g_attention_chunk_bytes; }

at::Tensor Model::Attention(int layer, const at::Tensor& x, ForwardContext& ctx) {
  const ModelConfig& c = config_;
  Block& b = blocks_[layer];
  PC_ASSERT(b.loaded, "block ", layer, " is not loaded");
  const int64_t B = x.size(0), T = x.size(1), H = c.heads, KV = c.kv_heads, hd = c.head_dim;
  at::Tensor q, k, v;  // (B, T, heads, hd)
  switch (arch().qkv) {
    case QkvLayout::kSeparate:
      q = ApplyLinear(b, b.index_of[int(Role::kQ)], x, ctx).view({B, T, H, hd});
      k = ApplyLinear(b, b.index_of[int(Role::kK)], x, ctx).view({B, T, KV, hd});
      v = ApplyLinear(b, b.index_of[int(Role::kV)], x, ctx).view({B, T, KV, hd});
      break;
    case QkvLayout::kFusedPerHead: {  // (B, T, H, [q k v] hd)
      at::Tensor qkv = ApplyLinear(b, b.index_of[int(Role::kQKV)], x, ctx).view({B, T, H, 3 * hd});
      q = qkv.narrow(-1, 0, hd);
      k = qkv.narrow(-1, hd, hd);
      v = qkv.narrow(-1, 2 * hd, hd);
      break;
    }
    case QkvLayout::kFusedBlocks: {  // (B, T, [q; k; v] H*hd)
      at::Tensor qkv = ApplyLinear(b, b.index_of[int(Role::kQKV)], x, ctx);
      q = qkv.narrow(-1, 0, H * hd).view({B, T, H, hd});
      k = qkv.narrow(-1, H * hd, H * hd).view({B, T, H, hd});
      v = qkv.narrow(-1, 2 * H * hd, H * hd).view({B, T, H, hd});
      break;
    }
  }
  if (arch().qk_norm) {  // per head, before RoPE (Qwen3)
    q = RmsNorm(Compute(b.q_norm.weight), q, c.norm_eps);
    k = RmsNorm(Compute(b.k_norm.weight), k, c.norm_eps);
  }
  q = q.transpose(1, 2);  // (B, H, T, hd)
  k = k.transpose(1, 2);  // (B, KV, T, hd)
  v = v.transpose(1, 2);
  if (arch().pos == PosKind::kRope) {
    q = ApplyRope(q, ctx.cos, ctx.sin);
    k = ApplyRope(k, ctx.cos, ctx.sin);
  }
  const int64_t S = ctx.start + T;
  if (ctx.cache != nullptr) {
    PC_CHECK(S <= ctx.cache->capacity, "KV cache of ", ctx.cache->capacity, " positions is full");
    ctx.cache->k[layer].narrow(2, ctx.start, T).copy_(k);
    ctx.cache->v[layer].narrow(2, ctx.start, T).copy_(v);
    k = ctx.cache->k[layer].narrow(2, 0, S);
    v = ctx.cache->v[layer].narrow(2, 0, S);
  } else {
    PC_ASSERT(ctx.start == 0, "a forward without cache starts at position 0");
  }
  double scale = c.scale_attn_weights ? 1.0 / std::sqrt(static_cast<double>(hd)) : 1.0;
  if (c.scale_attn_by_layer) scale /= static_cast<double>(layer + 1);  // GPT-2 scale_attn_by_inverse_layer_idx
  const int64_t g = H / KV;
  const int64_t window = c.UsesWindow(layer) ? c.sliding_window : 0;
  const bool probe = ctx.hooks != nullptr && ctx.hooks->WantsAttention(layer);  // needs the whole probs
  // Queries per chunk so that one chunk's scores (B, H, chunk, S) float32 stay under
  // AttentionChunkBytes() (model/attention.h); a window that fits is one chunk (the whole matrix).
  const int64_t row_bytes = std::max<int64_t>(1, B * H * S * static_cast<int64_t>(sizeof(float)));
  const int64_t chunk = probe ? T : std::clamp<int64_t>(AttentionChunkBytes() / row_bytes, 1, T);
  at::Tensor attn;  // (B, H, T, hd)
  if (chunk >= T) {
    // Query heads grouped by their key/value head: (B, KV, g*T, hd); no copies of k and v.
    at::Tensor qg = q.reshape({B, KV, g * T, hd});
    at::Tensor scores = at::matmul(qg, k.transpose(-1, -2)).mul_(scale).view({B, KV, g, T, S});
    auto mit = ctx.masks.find(window);
    if (mit == ctx.masks.end()) {
      mit = ctx.masks.emplace(window, AttentionMask(ctx.positions, S, window, scores.scalar_type())).first;
    }
    scores.add_(mit->second);
    at::Tensor probs = Softmax(scores);
    attn = at::matmul(probs.view({B, KV, g * T, S}), v).view({B, H, T, hd});
    if (probe) {
      at::Tensor v_heads = v.unsqueeze(2).expand({B, KV, g, S, hd}).reshape({B, H, S, hd});
      attn = ctx.hooks->AttentionContext(layer, probs.view({B, H, T, S}), v_heads, attn);
    }
  } else {
    // Query-chunked: softmax(q_c kᵀ) v for `chunk` queries at a time, over the keys a query of the
    // chunk may see (the causal limit: key positions up to the chunk's last query position); each
    // chunk's mask is built from its positions. Memory grows linearly with T.
    std::vector<at::Tensor> parts;
    for (int64_t t0 = 0; t0 < T; t0 += chunk) {
      const int64_t n = std::min(chunk, T - t0);
      const int64_t keys = ctx.start + t0 + n;  // keys 0 .. keys−1 (causal)
      at::Tensor kc = k.narrow(2, 0, keys), vc = v.narrow(2, 0, keys);
      at::Tensor qg = q.narrow(2, t0, n).reshape({B, KV, g * n, hd});
      at::Tensor scores = at::matmul(qg, kc.transpose(-1, -2)).mul_(scale).view({B, KV, g, n, keys});
      if (window > 0) {
        scores.add_(AttentionMask(ctx.positions.narrow(0, t0, n), keys, window, scores.scalar_type()));
      } else {  // the chunk's own n keys are the only ones some of its queries may not see
        scores.narrow(-1, keys - n, n).add_(CausalTail(ctx, n, scores.scalar_type()));
      }
      parts.push_back(at::matmul(Softmax(scores).view({B, KV, g * n, keys}), vc).view({B, H, n, hd}));
    }
    attn = at::cat(parts, 2);
  }
  at::Tensor out = attn.transpose(1, 2).reshape({B, T, H * hd});
  return ApplyLinear(b, b.index_of[int(Role::kO)], out, ctx);
}

at::Tensor Model::Mlp(int layer, const at::Tensor& x, ForwardContext& ctx) {
  Block& b = blocks_[layer];
  at::Tensor a;
  if (arch().mlp == MlpKind::kGated) {
    at::Tensor gate = ApplyLinear(b, b.index_of[int(Role::kGate)], x, ctx);
    at::Tensor up = ApplyLinear(b, b.index_of[int(Role::kUp)], x, ctx);
    a = at::GradMode::is_enabled() ? Activate(config_.act, gate) * up : Activate(config_.act, gate).mul_(up);
  } else {
    a = Activate(config_.act, ApplyLinear(b, b.index_of[int(Role::kUp)], x, ctx));
  }
  if (b.act_scales.defined()) a = a / Compute(b.act_scales);
  return ApplyLinear(b, b.index_of[int(Role::kDown)], a, ctx);
}

at::Tensor Model::AttentionUpdate(int layer, const at::Tensor& h, ForwardContext& ctx) {
  Block& b = blocks_[layer];
  at::Tensor x = h;
  if (config_.pre_norm) x = Observe(SiteKind::kNormOutput, layer, 0, ApplyNorm(b.attn_norm, h), ctx);
  return Update(SiteKind::kAttnUpdate, layer, Attention(layer, x, ctx), h, ctx);
}

at::Tensor Model::MlpUpdate(int layer, const at::Tensor& h, ForwardContext& ctx) {
  Block& b = blocks_[layer];
  at::Tensor x = h;
  if (config_.pre_norm) x = Observe(SiteKind::kNormOutput, layer, 1, ApplyNorm(b.mlp_norm, h), ctx);
  at::Tensor m = Mlp(layer, x, ctx);
  return m.defined() ? Update(SiteKind::kMlpUpdate, layer, m, h, ctx) : m;  // undefined: ctx.stop_at_last_input
}

at::Tensor Model::BlockForward(int layer, const at::Tensor& h, ForwardContext& ctx) {
  Block& b = blocks_[layer];
  PC_ASSERT(b.loaded, "block ", layer, " is not loaded");
  // The MLP runs last; its update is undefined when ctx.stop_at_last_input ended the pass.
  at::Tensor out;
  if (!config_.pre_norm) {  // OPT post-LN: norm after each residual add
    at::Tensor h1 = Observe(SiteKind::kNormOutput, layer, 0, ApplyNorm(b.attn_norm, h + AttentionUpdate(layer, h, ctx)), ctx);
    at::Tensor m = MlpUpdate(layer, h1, ctx);
    if (!m.defined()) return m;
    out = Observe(SiteKind::kNormOutput, layer, 1, ApplyNorm(b.mlp_norm, h1 + m), ctx);
  } else if (config_.parallel_residual) {
    at::Tensor a = AttentionUpdate(layer, h, ctx);
    at::Tensor m = MlpUpdate(layer, h, ctx);
    if (!m.defined()) return m;
    out = h + a + m;
  } else {
    at::Tensor h1 = h + AttentionUpdate(layer, h, ctx);
    at::Tensor m = MlpUpdate(layer, h1, ctx);
    if (!m.defined()) return m;
    out = h1 + m;
  }
  return Observe(SiteKind::kBlockOutput, layer, -1, out, ctx);
}

at::Tensor Model::Embed(const at::Tensor& tokens, ForwardContext& ctx) {
  PC_CHECK(tokens.dim() == 2, "forward: tokens must be (batch, length), got ", ShapeString(tokens.sizes()));
  PC_CHECK(tokens.size(1) == ctx.length, "forward: ", tokens.size(1), " tokens for a context of ", ctx.length);
  if (tokens.numel() > 0) {
    int64_t lo = tokens.min().item<int64_t>(), hi = tokens.max().item<int64_t>();
    PC_CHECK(lo >= 0 && hi < config_.vocab_size, "forward: token id ", lo < 0 ? lo : hi, " is outside the vocabulary of ",
             config_.vocab_size);
  }
  if (arch().pos == PosKind::kLearned) {
    PC_CHECK(ctx.start + ctx.length <= config_.max_pos, "forward: position ", ctx.start + ctx.length - 1,
             " is beyond the ", config_.max_pos, " learned positions of this model (use a shorter --seq-len)");
  }
  at::Tensor h = Compute(at::embedding(embed_, tokens));  // (B, T, embed_dim)
  if (project_in_.weight.defined()) h = at::linear(h, Compute(project_in_.weight));
  if (arch().pos == PosKind::kLearned) {
    h = h + Compute(pos_embed_.index_select(0, ctx.positions + arch().pos_offset)).unsqueeze(0);
  }
  return h;
}

at::Tensor Model::Head(const at::Tensor& h, ForwardContext& ctx) {
  at::Tensor x = h;
  if (config_.has_final_norm) x = Observe(SiteKind::kFinalNorm, -1, -1, ApplyNorm(final_norm_, x), ctx);
  if (project_out_.weight.defined()) x = at::linear(x, Compute(project_out_.weight));
  at::Tensor logits = at::linear(x, Compute(lm_head_.weight), Compute(lm_head_.bias));
  if (logits.scalar_type() != at::kFloat) logits = logits.to(at::kFloat);
  return Observe(SiteKind::kLogits, -1, -1, logits, ctx);
}

at::Tensor Model::Forward(const at::Tensor& tokens, ForwardContext& ctx) {
  at::Tensor h = Embed(tokens, ctx);
  for (int l = 0; l < num_layers(); ++l) h = BlockForward(l, h, ctx);
  if (ctx.cache != nullptr) ctx.cache->length += ctx.length;
  return Head(h, ctx);
}

at::Tensor Model::Forward(const at::Tensor& tokens, ForwardHooks* hooks) {
  ForwardContext ctx = MakeContext(tokens.size(1), 0, hooks, nullptr);
  return Forward(tokens, ctx);
}

// ---- Saving ---------------------------------------------------------------------------------


StDType Model::DiskDType(const std::string& name) const {
  auto it = disk_dtype_.find(name);
  if (it != disk_dtype_.end()) return it->second;
  if (ckpt_ != nullptr && ckpt_->Has(name)) return ckpt_->Info(name).dtype;
  // A tensor a method added (AWQ activation scales): the embedding's dtype.
  auto emb = disk_dtype_.find(WeightOf(arch().embed.hf));
  return emb != disk_dtype_.end() ? emb->second : FromScalarType(dtype_);
}

void Model::ForEachTopTensor(const TensorVisitor& fn) {
  auto visit = [&](const std::string& name, const at::Tensor& t) {
    if (t.defined()) fn(name, t, DiskDType(name));
  };
  const ArchSpec& a = arch();
  visit(WeightOf(a.embed.hf), embed_);
  visit(WeightOf(a.pos_embed.hf), pos_embed_);
  if (project_in_.weight.defined()) {
    visit(WeightOf(project_in_.name), project_in_.weight);
    visit(WeightOf(project_out_.name), project_out_.weight);
  }
  if (config_.has_final_norm) {
    visit(WeightOf(final_norm_.name), final_norm_.weight);
    visit(BiasOf(final_norm_.name), final_norm_.bias);
  }
  if (!config_.tie_embeddings) {
    visit(WeightOf(lm_head_.name), lm_head_.weight);
    visit(BiasOf(lm_head_.name), lm_head_.bias);
  }
}

void Model::ForEachBlockTensor(int layer, const TensorVisitor& fn) {
  const Block& b = block(layer);
  PC_ASSERT(b.loaded, "block ", layer, " is not loaded");
  auto visit = [&](const std::string& name, const at::Tensor& t, bool conv1d) {
    if (t.defined()) fn(name, conv1d ? t.t() : t, DiskDType(name));
  };
  for (const Norm* n : {&b.attn_norm, &b.mlp_norm, &b.q_norm, &b.k_norm}) {
    visit(WeightOf(n->name), n->weight, false);
    visit(BiasOf(n->name), n->bias, false);
  }
  for (const Linear& lin : b.linears) {
    visit(WeightOf(lin.name), lin.weight, arch().conv1d);
    visit(BiasOf(lin.name), lin.bias, false);
  }
  if (b.act_scales.defined()) visit(b.act_scales_name, b.act_scales, false);
}

void Model::ForEachTensor(const TensorVisitor& fn) {
  ForEachTopTensor(fn);
  for (int l = 0; l < num_layers(); ++l) {
    bool was_loaded = blocks_[l].loaded;
    if (!was_loaded) LoadBlock(l);
    ForEachBlockTensor(l, fn);
    if (!was_loaded) UnloadBlock(l);
  }
}

std::vector<SafetensorsWriter::Entry> Model::TensorEntries(const SaveOptions& options, bool act_scales) const {
  std::vector<SafetensorsWriter::Entry> out;
  auto add = [&](const std::string& name, std::vector<int64_t> shape) {
    out.push_back({name, options.keep_dtype ? DiskDType(name) : FromScalarType(options.dtype), std::move(shape)});
  };
  auto add_tensor = [&](const std::string& name, const at::Tensor& t, bool conv1d) {
    if (!t.defined()) return;
    std::vector<int64_t> shape = t.sizes().vec();
    if (conv1d && shape.size() == 2) std::swap(shape[0], shape[1]);
    add(name, shape);
  };
  const ArchSpec& a = arch();
  add_tensor(WeightOf(a.embed.hf), embed_, false);
  if (pos_embed_.defined()) add_tensor(WeightOf(a.pos_embed.hf), pos_embed_, false);
  if (project_in_.weight.defined()) {
    add_tensor(WeightOf(project_in_.name), project_in_.weight, false);
    add_tensor(WeightOf(project_out_.name), project_out_.weight, false);
  }
  if (config_.has_final_norm) {
    add_tensor(WeightOf(final_norm_.name), final_norm_.weight, false);
    add_tensor(BiasOf(final_norm_.name), final_norm_.bias, false);
  }
  if (!config_.tie_embeddings) {
    if (lm_head_.weight.defined()) {
      add_tensor(WeightOf(lm_head_.name), lm_head_.weight, false);
    } else {  // still in the checkpoint (LoadOptions::load_head)
      add(WeightOf(lm_head_.name), {config_.vocab_size, config_.embed_dim});
    }
    add_tensor(BiasOf(lm_head_.name), lm_head_.bias, false);
  }
  for (int l = 0; l < num_layers(); ++l) {
    const Block& b = blocks_[l];
    if (b.loaded) {
      for (const Norm* n : {&b.attn_norm, &b.mlp_norm, &b.q_norm, &b.k_norm}) {
        add_tensor(WeightOf(n->name), n->weight, false);
        add_tensor(BiasOf(n->name), n->bias, false);
      }
      for (const Linear& lin : b.linears) {
        add_tensor(WeightOf(lin.name), lin.weight, a.conv1d);
        add_tensor(BiasOf(lin.name), lin.bias, false);
      }
      if (b.act_scales.defined()) add_tensor(b.act_scales_name, b.act_scales, false);
      else if (act_scales && *a.act_scales) add(ExpandName(a.act_scales, l), {config_.intermediate});
      continue;
    }
    PC_ASSERT(ckpt_ != nullptr, "block ", l, " is neither loaded nor in a checkpoint");
    auto from_ckpt = [&](const std::string& name) {
      if (ckpt_->Has(name)) add(name, ckpt_->Info(name).shape);
    };
    for (const TensorName* n : {&a.attn_norm, &a.mlp_norm, &a.q_norm, &a.k_norm}) {
      if (!n->present()) continue;
      from_ckpt(WeightOf(ExpandName(n->hf, l)));
      from_ckpt(BiasOf(ExpandName(n->hf, l)));
    }
    for (const LinearSpec& spec : a.linears) {
      from_ckpt(WeightOf(ExpandName(spec.name.hf, l)));
      if (spec.bias != BiasRule::kNone) from_ckpt(BiasOf(ExpandName(spec.name.hf, l)));
    }
    if (*a.act_scales) {
      std::string name = ExpandName(a.act_scales, l);
      if (ckpt_->Has(name)) from_ckpt(name);
      else if (act_scales) add(name, {config_.intermediate});
    }
  }
  return out;
}

nlohmann::json Model::ConfigJson(const SaveOptions& options) const {
  nlohmann::json j = config_.raw;
  if (!options.keep_dtype) {
    j["torch_dtype"] = options.dtype == at::kBFloat16 ? "bfloat16" : options.dtype == at::kHalf ? "float16" : "float32";
  }
  if (config_.parallel_scale != 1.0) j["perpcomp_parallel_scale"] = config_.parallel_scale;
  j["tie_word_embeddings"] = config_.tie_embeddings;
  return j;
}

void Model::WriteInto(const std::string& dir, const SaveOptions& options) {
  fs::WriteFileAtomic(fs::Join(dir, "config.json"), ConfigJson(options).dump(2) + "\n");
  SafetensorsWriter writer(dir, TensorEntries(options), options.max_shard_bytes);
  ForEachTensor([&](const std::string& name, const at::Tensor& t, StDType) { writer.Write(name, t); });
  writer.Finish();
}

void Model::Save(const std::string& dir, const SaveOptions& options,
                 const std::function<void(const std::string&)>& extra) {
  fs::StagedDir staged(dir, options.overwrite);
  WriteInto(staged.path(), options);
  if (!source_dir_.empty()) {
    for (const char* f : {"tokenizer.json", "tokenizer.model", "tokenizer_config.json", "special_tokens_map.json",
                          "vocab.json", "merges.txt", "added_tokens.json", "generation_config.json"}) {
      std::string src = fs::Join(source_dir_, f);
      if (fs::Exists(src)) fs::WriteFileAtomic(fs::Join(staged.path(), f), fs::ReadFile(src));
    }
  }
  if (extra) extra(staged.path());
  staged.Commit();
}

// ---- Generation -----------------------------------------------------------------------------

std::vector<int64_t> Generate(Model& model, const std::vector<int64_t>& prompt, const GenerateOptions& options,
                              const std::function<void(int64_t)>& on_token) {
  PC_CHECK(!prompt.empty(), "generate: the prompt must hold at least one token (BOS or end-of-text)");
  PC_CHECK(options.max_new_tokens >= 0, "generate: --max-new-tokens must not be negative");
  PC_CHECK(options.temperature >= 0, "generate: --temperature must not be negative");
  PC_CHECK(options.top_p > 0 && options.top_p <= 1, "generate: --top-p must lie in (0, 1]");
  const int64_t total = static_cast<int64_t>(prompt.size()) + options.max_new_tokens;
  const ModelConfig& c = model.config();
  if (model.arch().pos == PosKind::kLearned) {
    PC_CHECK(total <= c.max_pos, "generate: prompt (", prompt.size(), " tokens) + ", options.max_new_tokens,
             " new tokens exceed the model's ", c.max_pos, " positions");
  } else if (total > c.max_pos) {
    // Rotary positions extend past the context, but the model was not trained there.
    log::Warn("generate", "prompt (", prompt.size(), " tokens) + ", options.max_new_tokens,
              " new tokens run past the model's context of ", c.max_pos,
              " tokens (max_position_embeddings); tokens beyond it are generated at positions the model never saw");
  }
  std::mt19937_64 rng(options.seed);
  KvCache cache = model.MakeCache(1, total);
  std::vector<int64_t> out;
  at::Tensor input = at::tensor(at::ArrayRef<int64_t>(prompt), at::kLong).view({1, -1});
  for (int step = 0; step < options.max_new_tokens; ++step) {
    ForwardContext ctx = model.MakeContext(input.size(1), 0, nullptr, &cache);
    at::Tensor logits = model.Forward(input, ctx).select(1, input.size(1) - 1).squeeze(0);  // (V,)
    int64_t next;
    if (options.temperature == 0) {
      next = logits.argmax().item<int64_t>();
    } else {
      at::Tensor probs = at::softmax(logits.to(at::kDouble) / options.temperature, -1);
      if (options.top_p < 1.0) {
        auto sorted = probs.sort(/*dim=*/-1, /*descending=*/true);
        at::Tensor vals = std::get<0>(sorted), idx = std::get<1>(sorted);
        at::Tensor keep = (vals.cumsum(-1) - vals) < options.top_p;
        at::Tensor filtered = at::zeros_like(probs);
        filtered.index_put_({idx.masked_select(keep)}, vals.masked_select(keep));
        probs = filtered / filtered.sum();
      }
      // Inverse CDF with our own uniform draw: reproducible for a seed on any machine.
      double u = static_cast<double>(rng() >> 11) * (1.0 / 9007199254740992.0);
      const double* p = probs.contiguous().data_ptr<double>();
      double acc = 0;
      next = probs.size(0) - 1;
      for (int64_t i = 0; i < probs.size(0); ++i) {
        acc += p[i];
        if (u < acc) {
          next = i;
          break;
        }
      }
    }
    out.push_back(next);
    if (on_token) on_token(next);
    if (next == options.stop_id) break;
    input = at::full({1, 1}, next, at::kLong);
  }
  return out;
}

}  // namespace pc
