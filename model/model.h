// model/model.h — a decoder-only transformer loaded from a Hugging Face folder, and its
// forward pass with hooks.
//
// Layout convention (stated once): every linear weight is (out, in), row-major, as
// torch.nn.Linear stores it; GPT-2's Conv1D weights, stored (in, out) on disk, are
// transposed on load and back on save. Activations are (B, T, features).
//
// The forward is written once for every architecture; the ArchSpec's flags choose the
// norm, positions, q/k/v layout, MLP and residual form. C++ modules have no forward hooks,
// so the forward calls a ForwardHooks object at named sites: calibration captures linear
// inputs there, metrics capture outputs, probes replace updates and hidden states.
#pragma once

#include <ATen/ATen.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/safetensors.h"

namespace pc {

struct Linear {
  std::string name;   // HF module name ("model.layers.3.mlp.down_proj"); weight tensor is name + ".weight"
  Role role = Role::kQ;
  at::Tensor weight;  // (out, in)
  at::Tensor bias;    // (out,) or undefined
  int64_t in_features() const { return weight.size(1); }
  int64_t out_features() const { return weight.size(0); }
};

struct Norm {
  std::string name;   // HF module name
  at::Tensor weight;  // (d,)
  at::Tensor bias;    // (d,) for LayerNorm; undefined for RMSNorm
};

struct Block {
  int layer = 0;
  Norm attn_norm, mlp_norm;
  Norm q_norm, k_norm;          // per-head RMSNorm (head_dim,) on q and k (ArchSpec::qk_norm), or undefined
  std::vector<Linear> linears;  // in the ArchSpec's order
  at::Tensor act_scales;        // (intermediate,) AWQ scaled activation act(x)/s, or undefined
  std::string act_scales_name;  // HF tensor name for act_scales
  bool loaded = false;
  PerRole<int8_t> index_of = NoLinears();  // Role -> index in linears, -1 absent

  static PerRole<int8_t> NoLinears() {
    PerRole<int8_t> none;
    none.fill(-1);
    return none;
  }

  Linear* Find(Role role);
  const Linear* Find(Role role) const;
  Linear& Get(Role role);  // asserts presence
};

// ---- Hooks ----------------------------------------------------------------------------------

enum class SiteKind : uint8_t {
  kLinearInput,   // a block linear's input (B, T, in)           observe
  kLinearOutput,  // a block linear's output (B, T, out)         observe / replace
  kNormOutput,    // attn (index 0) / mlp (index 1) norm output  observe / replace
  kAttnUpdate,    // attention update Δ added to the residual    observe / replace (incoming = h)
  kMlpUpdate,     // MLP update Δ                                observe / replace (incoming = h)
  kBlockOutput,   // residual stream after the block (B, T, d)   observe / replace
  kFinalNorm,     // final norm output (B, T, d)                 observe / replace
  kLogits,        // (B, T, V)                                   observe
  kCount
};
const char* SiteKindName(SiteKind k);

struct Site {
  SiteKind kind;
  int layer = -1;  // -1 for model-level sites
  int index = -1;  // linear index in Block::linears, or norm index (0 attention, 1 MLP)
};

class ForwardHooks {
 public:
  virtual ~ForwardHooks() = default;
  virtual bool Wants(SiteKind kind) const = 0;
  // Observe `x` at `site`, or return a replacement of the same shape. `incoming` is the
  // residual stream entering the sublayer for update sites, undefined elsewhere.
  virtual at::Tensor At(const Site& site, const at::Tensor& x, const at::Tensor& incoming) { return x; }
  // Attention internals for value-space probes. Called only when WantsAttention(layer):
  // probs (B, H, T, S), v (B, H, S, head_dim) expanded to query heads, ctx = probs @ v
  // (B, H, T, head_dim). Return ctx or a replacement.
  virtual bool WantsAttention(int layer) const { return false; }
  virtual at::Tensor AttentionContext(int layer, const at::Tensor& probs, const at::Tensor& v,
                                      const at::Tensor& ctx) {
    return ctx;
  }
};

// Past keys and values for incremental decoding.
struct KvCache {
  std::vector<at::Tensor> k, v;  // per layer: (B, kv_heads, capacity, head_dim)
  int64_t length = 0;            // tokens already in the cache
  int64_t capacity = 0;
};

// Per-call state of a forward over T new tokens at positions start .. start+T-1.
struct ForwardContext {
  int64_t start = 0;
  int64_t length = 0;           // T
  ForwardHooks* hooks = nullptr;
  KvCache* cache = nullptr;
  at::Tensor cos, sin;          // (T, rotary_dim) for RoPE
  at::Tensor positions;         // (T,) int64
  std::map<int64_t, at::Tensor> masks;  // window (0 = none) -> additive mask (T, S)
  std::map<int64_t, at::Tensor> causal_tails;  // query-chunked attention: n -> mask of a chunk's last n keys (n, n)
  // A pass that only observes linear inputs: BlockForward ends once the block's last linear (the MLP's
  // down projection) has seen its input, without its product, and returns an undefined tensor.
  bool stop_at_last_input = false;

  bool Wants(SiteKind k) const { return hooks != nullptr && hooks->Wants(k); }
};

struct LoadOptions {
  at::ScalarType dtype = at::kFloat;  // compute dtype
  bool load_blocks = true;            // false: blocks are loaded by LoadBlock() (compress engine)
  bool check_finite = true;           // NaN/Inf in a weight is refused
  bool load_head = true;              // false: an untied head stays in the checkpoint until LoadHead()
};

struct SaveOptions {
  bool overwrite = false;
  bool keep_dtype = true;                      // on-disk dtype as loaded
  at::ScalarType dtype = at::kFloat;           // used when !keep_dtype
  uint64_t max_shard_bytes = kDefaultMaxShardBytes;
};

class Model {
 public:
  static std::unique_ptr<Model> Load(const std::string& dir, const LoadOptions& options = {});
  // From tensors in HF naming and on-disk layout (converters, trainers, tests).
  static std::unique_ptr<Model> FromTensors(ModelConfig config, const std::map<std::string, at::Tensor>& tensors,
                                            at::ScalarType dtype = at::kFloat, bool check_finite = true);

  const ModelConfig& config() const { return config_; }
  ModelConfig& mutable_config() { return config_; }
  const ArchSpec& arch() const { return *config_.arch; }
  const std::string& source_dir() const { return source_dir_; }
  at::ScalarType dtype() const { return dtype_; }  // the weights' dtype in memory
  // The dtype of the arithmetic and the activations: dtype(), except bf16 weights on a CPU without
  // native bf16 arithmetic, which are computed in f32 (core/tensor_util.h ComputeDType).
  at::ScalarType compute_dtype() const { return compute_dtype_; }
  int num_layers() const { return static_cast<int>(blocks_.size()); }

  Block& block(int layer);
  const Block& block(int layer) const;
  void LoadBlock(int layer);    // from the checkpoint (no-op when loaded)
  void UnloadBlock(int layer);  // frees its tensors (the checkpoint pages went when they were copied)
  void LoadHead();              // an untied head not loaded by Load (LoadOptions::load_head)
  bool HasCheckpoint() const { return ckpt_ != nullptr; }

  at::Tensor& embed() { return embed_; }            // (vocab, embed_dim)
  at::Tensor& pos_embed() { return pos_embed_; }    // (positions, hidden) or undefined
  Norm& final_norm() { return final_norm_; }
  Linear& lm_head() { return lm_head_; }            // weight may share storage with embed (tied)
  bool tied() const { return config_.tie_embeddings; }
  // Every block linear (loaded blocks only) and, last, lm_head.
  std::vector<Linear*> Linears(bool include_lm_head = true);
  // Every trainable tensor in compute layout (embedding, positions, norms, linears, biases, head;
  // a tied head is the embedding). All blocks must be loaded.
  std::vector<at::Tensor> Parameters();
  int64_t ParameterCount() const;

  // ---- forward ----
  ForwardContext MakeContext(int64_t length, int64_t start = 0, ForwardHooks* hooks = nullptr,
                             KvCache* cache = nullptr) const;
  KvCache MakeCache(int64_t batch, int64_t capacity) const;
  // tokens (B, T) int64 -> logits (B, T, V) float32
  at::Tensor Forward(const at::Tensor& tokens, ForwardContext& ctx);
  at::Tensor Forward(const at::Tensor& tokens, ForwardHooks* hooks = nullptr);
  // The pieces, for callers that run parts (metrics' local errors, the block-wise engine).
  at::Tensor Embed(const at::Tensor& tokens, ForwardContext& ctx);           // (B, T) -> (B, T, d)
  at::Tensor BlockForward(int layer, const at::Tensor& h, ForwardContext& ctx);
  at::Tensor AttentionUpdate(int layer, const at::Tensor& h, ForwardContext& ctx);  // Δ (B, T, d)
  at::Tensor MlpUpdate(int layer, const at::Tensor& h, ForwardContext& ctx);        // Δ (B, T, d)
  at::Tensor Head(const at::Tensor& h, ForwardContext& ctx);                 // (B, T, d) -> logits

  // ---- saving ----
  using TensorVisitor = std::function<void(const std::string& name, const at::Tensor& tensor, StDType dtype)>;
  // Visits every tensor in HF naming and on-disk layout, with its on-disk dtype (blocks that
  // are not loaded are loaded for the visit and unloaded after).
  void ForEachTensor(const TensorVisitor& fn);
  void ForEachTopTensor(const TensorVisitor& fn);             // embeddings, norms, head
  void ForEachBlockTensor(int layer, const TensorVisitor& fn);  // one loaded block
  // Declarations of every tensor for a streaming writer, from the checkpoint headers and the
  // loaded blocks, without loading anything. `act_scales`: declare every block's AWQ activation
  // scales (a method will add them).
  std::vector<SafetensorsWriter::Entry> TensorEntries(const SaveOptions& options, bool act_scales = false) const;
  // Writes config.json, the safetensors and the tokenizer files (copied from the source
  // folder) into `dir`, staged: a temporary folder renamed into place when complete.
  // `extra` may write more files into the staged folder before the rename.
  void Save(const std::string& dir, const SaveOptions& options = {},
            const std::function<void(const std::string& staged_dir)>& extra = nullptr);
  // Writes into an existing folder (no staging): config.json + weights.
  void WriteInto(const std::string& dir, const SaveOptions& options);
  nlohmann::json ConfigJson(const SaveOptions& options) const;

 private:
  using Getter = std::function<at::Tensor(const std::string& name, bool required)>;
  Model() = default;
  void InitFromConfig();
  void LoadTop(const Getter& get, bool head);
  void LoadHeadFrom(const Getter& get);
  void LoadBlockFrom(int layer, const Getter& get);
  Getter CheckpointGetter() const;
  at::Tensor Attention(int layer, const at::Tensor& x, ForwardContext& ctx);
  at::Tensor Mlp(int layer, const at::Tensor& x, ForwardContext& ctx);
  at::Tensor ApplyNorm(const Norm& n, const at::Tensor& x) const;
  at::Tensor ApplyLinear(const Block& b, int index, const at::Tensor& x, ForwardContext& ctx);
  // A weight as the arithmetic uses it: `t` in compute_dtype() (a converted copy when it is stored
  // in another dtype); an undefined tensor stays undefined.
  at::Tensor Compute(const at::Tensor& t) const;
  at::Tensor Update(SiteKind kind, int layer, at::Tensor delta, const at::Tensor& h, ForwardContext& ctx);
  at::Tensor Observe(SiteKind kind, int layer, int index, at::Tensor x, ForwardContext& ctx);
  // Fetches `name` through `get`, checks its shape against `shape` (compute layout) and its
  // values, records its on-disk dtype, converts to the compute layout and dtype.
  at::Tensor Fetch(const Getter& get, const std::string& name, std::vector<int64_t> shape, bool required,
                   bool conv1d);
  StDType DiskDType(const std::string& name) const;

  ModelConfig config_;
  at::ScalarType dtype_ = at::kFloat;
  at::ScalarType compute_dtype_ = at::kFloat;
  bool check_finite_ = true;
  std::string source_dir_;
  std::shared_ptr<Checkpoint> ckpt_;
  std::map<std::string, StDType> disk_dtype_;  // tensor -> on-disk dtype
  at::Tensor embed_, pos_embed_;
  Linear project_in_, project_out_;
  Norm final_norm_;
  Linear lm_head_;
  std::vector<Block> blocks_;
  at::Tensor inv_freq_;  // (rotary_dim / 2,) float32, for forwards up to max_position_embeddings
  double rope_scaling_ = 1.0;  // cos and sin multiplied by it (yarn)
};

// Greedy or sampled generation with a KV cache. Returns the new token ids.
struct GenerateOptions {
  int max_new_tokens = 128;
  double temperature = 1.0;  // 0: greedy
  double top_p = 1.0;
  uint64_t seed = 0;
  int64_t stop_id = -1;      // stop after generating this id (-1: none)
};
std::vector<int64_t> Generate(Model& model, const std::vector<int64_t>& prompt, const GenerateOptions& options,
                              const std::function<void(int64_t)>& on_token = nullptr);

}  // namespace pc
