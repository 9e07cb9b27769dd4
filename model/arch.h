// model/arch.h — architectures as data. One ArchSpec per config.json `model_type`, written as one
// function per architecture in model/arch.cc that sets a field per property (as gemma.cpp's config
// functions do). A table owns everything that differs between architectures: the forward flags,
// the config.json keys and their defaults, the tensor names in Hugging Face checkpoints and in
// llama.cpp GGUF files, the buffers checkpoints may carry, and the AWQ scale groups. The loader,
// the saver, the converters, the memory estimate and the methods read roles and flags from it;
// no code outside model/arch.cc tests a model_type. How to add one: docs/ARCHITECTURE.md.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace pc {

enum class NormKind { kLayerNorm, kRmsNorm };
enum class PosKind { kRope, kLearned };
// q, k, v as three linears; one fused linear laid out per head as [q, k, v] (GPT-NeoX);
// one fused linear laid out as [q; k; v] blocks (GPT-2's c_attn).
enum class QkvLayout { kSeparate, kFusedPerHead, kFusedBlocks };
enum class MlpKind { kGated, kPlain };  // down(act(gate(x)) * up(x)) | down(act(up(x)))
enum class Act { kSilu, kGeluErf, kGeluTanh, kRelu };

// Roles of a block's linear layers. kQKV only for fused layouts. kCount is the number of roles:
// arrays indexed by a role are std::array<T, kRoleCount>, so a new role cannot overflow them.
enum class Role : int8_t { kQ, kK, kV, kQKV, kO, kGate, kUp, kDown, kCount };
constexpr int kRoleCount = static_cast<int>(Role::kCount);
static_assert(kRoleCount <= 127, "roles index int8_t tables");
template <typename T>
using PerRole = std::array<T, kRoleCount>;
const char* RoleName(Role r);  // "q", "k", "v", "qkv", "o", "gate", "up", "down"
// The tensor a linear reads, in block order: 0 the attention input (q, k, v, qkv), 1 the attention
// context (o), 2 the MLP input (gate, up), 3 the MLP hidden state (down). Linears of one index share
// their input; it is also the order of true-sequential compression.
int InputIndex(Role r);
const char* ActName(Act a);

enum class BiasRule { kNone, kOptional, kRequired };

// One module under its two names, {L} standing for the layer: the Hugging Face checkpoint's
// ("model.layers.{L}.self_attn.q_proj") and llama.cpp's GGUF ("blk.{L}.attn_q"). Module names:
// the tensors are name + ".weight" and name + ".bias". "" : the architecture has no such module.
struct TensorName {
  const char* hf = "";
  const char* gguf = "";
  bool present() const { return hf[0] != '\0'; }
};
std::string WeightOf(const std::string& module);  // module + ".weight"
std::string BiasOf(const std::string& module);    // module + ".bias"

struct LinearSpec {
  Role role;
  TensorName name;
  BiasRule bias;
};

// AWQ scale groups (issue: AWQ). The previous op absorbs 1/s; the members are scaled by s;
// the loss is measured on `inspect`.
enum class PrevKind { kAttnNorm, kMlpNorm, kLinear, kActivation };
enum class Inspect { kAttention, kMlp, kMembers };
struct ScaleGroupSpec {
  PrevKind prev;
  Role prev_linear = Role::kQ;      // for kLinear: its output rows (last rows for fused qkv) absorb 1/s
  std::vector<Role> members;
  Inspect inspect;
  bool only_if_shapes_match = false;  // llm-awq: v -> o only when v and o have the same shape (not GQA)
};

// config.json keys. "a|b": the first of them present counts; the first is the one written
// (ConfigJsonFor in model/config.h). "" : the architecture has no such key (the default holds).
struct ConfigKeys {
  const char* hidden = "hidden_size";
  const char* layers = "num_hidden_layers";
  const char* heads = "num_attention_heads";
  const char* kv_heads = "";             // "" : one key/value head per head
  const char* head_dim = "";             // "" : hidden / heads
  const char* intermediate = "intermediate_size";
  const char* max_pos = "max_position_embeddings";
  const char* norm_eps = "";
  const char* act = "";
  const char* tie = "tie_word_embeddings";
  const char* rope_theta = "";           // RoPE base
  const char* rope_scaling = "";         // transformers' rope_scaling object (model/rope.h)
  const char* rotary_pct = "";           // rotated fraction of head_dim
  const char* parallel_residual = "";    // attention and MLP read the same residual state
  const char* scale_attn_weights = "";   // false: scores are not divided by sqrt(head_dim)
  const char* scale_attn_by_layer = "";  // scores divided by (layer + 1) as well
  const char* embed_dim = "";            // token embedding width when it differs from hidden (projected)
  const char* pre_norm = "";             // false: post-LN blocks (norm after each residual add)
  const char* remove_final_norm = "";    // true: no final norm
  const char* norm_affine = "";          // must be true when present (no affine-free LayerNorm)
  const char* sliding_window = "";       // attention window (0 or null: none)
  const char* use_sliding_window = "";   // "" : sliding_window alone decides
  const char* max_window_layers = "";    // layers >= this use the window (with use_sliding_window)
};

// Values when a config.json key is absent.
struct ConfigDefaults {
  const char* act = "silu";
  double norm_eps = 1e-5;
  bool tie = false;
  double rotary_pct = 1.0;
  bool parallel_residual = false;
  int64_t intermediate_per_hidden = 0;  // 0: the intermediate size is required; else this × hidden
  int64_t max_pos = 2048;               // RoPE models without the key (learned positions require it)
  int64_t sliding_window = 0;           // the sliding_window key absent (present and null: no window)
  int64_t max_window_layers = 0;
};

// How llama.cpp's converter (convert_hf_to_gguf.py) rearranged rows of the attention projections
// when it wrote a GGUF file; a GGUF reader undoes it. In every GGUF file a linear weight is stored
// (out, in), also for GPT-2, whose Conv1D (in, out) weights the converter transposed.
enum class GgufRows {
  kAsHf,        // rows as in the Hugging Face checkpoint
  kQkPermuted,  // q and k (weights and biases) permuted from RoPE halves to interleaved pairs, per head
                // (LlamaModel.permute; k with the key/value heads)
  kQkvBlocks,   // the fused per-head [q, k, v] rows regrouped into [q; k; v] blocks
};

struct ArchSpec {
  // ---- identity ----
  const char* model_type = "";       // config.json model_type
  const char* hf_architecture = "";  // config.json architectures[0] a converter writes
  const char* gguf_arch = "";        // llama.cpp general.architecture (also its metadata key prefix)
  GgufRows gguf_rows = GgufRows::kAsHf;

  // ---- forward ----
  NormKind norm = NormKind::kRmsNorm;
  PosKind pos = PosKind::kRope;
  QkvLayout qkv = QkvLayout::kSeparate;
  MlpKind mlp = MlpKind::kGated;
  bool conv1d = false;    // linear weights stored (in, out) in the checkpoint (GPT-2 Conv1D)
  int pos_offset = 0;     // learned positions: index = position + offset (OPT: 2)
  bool qk_norm = false;   // per-head RMSNorm (weight of head_dim) on q and k before RoPE (q_norm, k_norm)

  // ---- tensors (module names; see TensorName) ----
  TensorName embed;        // token embedding (vocab, embed_dim)
  TensorName pos_embed;    // learned positions
  TensorName project_in;   // embed_dim -> hidden when they differ (OPT), and back before the head
  TensorName project_out;
  TensorName final_norm;
  TensorName lm_head;      // output projection (absent from tied checkpoints)
  TensorName attn_norm;    // block norms, {L}
  TensorName mlp_norm;
  TensorName q_norm;       // with qk_norm
  TensorName k_norm;
  const char* act_scales = "";          // tensor: AWQ scaled activation (act(x)/s before down), {L}, or ""
  std::vector<LinearSpec> linears;      // in forward order
  std::vector<const char*> ignorable;   // suffixes of buffers some checkpoints carry (not used)

  // ---- config.json ----
  ConfigKeys keys;
  ConfigDefaults defaults;

  // ---- compression ----
  std::vector<ScaleGroupSpec> awq_groups;
};

// The spec for a config.json model_type; unknown types -> error listing the supported ones.
const ArchSpec& ArchSpecFor(const std::string& model_type);
// Every table, in registry order (tests enumerate it).
const std::vector<ArchSpec>& AllArchSpecs();
std::vector<std::string> SupportedModelTypes();
// The spec for a GGUF general.architecture: the first table in registry order that llama.cpp writes
// under it (llama.cpp labels Mistral checkpoints "llama": they read as llama). nullptr when none.
const ArchSpec* ArchSpecForGguf(const std::string& general_architecture);

// One module of a model with `layers` blocks under its two names, layer expanded; `layer` -1 for
// top-level modules. Every module the table names, in the order embed, positions, projections,
// final norm, head, then per block the norms, q/k norms and linears. A GGUF reader maps names with it
// (a tied checkpoint has no head tensor; llama.cpp omits `output` then, and writes an extra
// `rope_freqs` for llama3 RoPE, which config.json's rope_scaling already describes).
struct ModuleName {
  std::string hf, gguf;
  int layer = -1;
};
std::vector<ModuleName> ModuleNames(const ArchSpec& arch, int64_t layers);

Act ParseAct(const std::string& name, const std::string& where);
// "model.layers.{L}.mlp" -> "model.layers.3.mlp"
std::string ExpandName(const char* pattern, int layer);

}  // namespace pc
