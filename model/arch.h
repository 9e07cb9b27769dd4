// model/arch.h — architectures as data: Hugging Face tensor names -> roles, forward flags,
// config.json keys, and AWQ scale groups. One ArchSpec per `model_type`; the forward and
// every method see roles, never names. To add an architecture: add a table in arch.cc
// (see docs/ARCHITECTURE.md, "Adding an architecture").
#pragma once

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

// Roles of a block's linear layers. kQKV only for fused layouts.
enum class Role : int8_t { kQ, kK, kV, kQKV, kO, kGate, kUp, kDown };
const char* RoleName(Role r);  // "q", "k", "v", "qkv", "o", "gate", "up", "down"
// The tensor a linear reads, in block order: 0 the attention input (q, k, v, qkv), 1 the attention
// context (o), 2 the MLP input (gate, up), 3 the MLP hidden state (down). Linears of one index share
// their input; it is also the order of true-sequential compression.
int InputIndex(Role r);
const char* ActName(Act a);

enum class BiasRule { kNone, kOptional, kRequired };

struct LinearSpec {
  Role role;
  const char* name;  // HF module name with {L} for the layer: "model.layers.{L}.self_attn.q_proj"
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

struct ArchSpec {
  const char* model_type;
  NormKind norm;
  PosKind pos;
  QkvLayout qkv;
  MlpKind mlp;
  bool conv1d;             // weights stored [in, out] (GPT-2 Conv1D)
  int pos_offset;          // learned positions: index = position + offset (OPT: 2)
  const char* embed;       // token embedding tensor
  const char* pos_embed;   // learned positions, or ""
  const char* final_norm;  // module name ("" when the model has none)
  const char* lm_head;     // output projection tensor (absent when tied)
  const char* project_in;  // OPT word_embed_proj_dim != hidden, or ""
  const char* project_out;
  const char* attn_norm;   // block norms, {L}
  const char* mlp_norm;
  const char* act_scales;  // AWQ scaled activation (act(x)/s before down), {L}, or ""
  std::vector<LinearSpec> linears;      // in forward order
  std::vector<const char*> ignorable;   // suffixes of buffers some checkpoints carry
  std::vector<ScaleGroupSpec> awq_groups;
  // config.json keys
  const char* hidden_keys;
  const char* layers_keys;
  const char* heads_keys;
  const char* kv_heads_keys;     // "" : same as heads
  const char* intermediate_keys;
  const char* max_pos_keys;
  const char* eps_keys;
  const char* act_keys;
  const char* default_act;
  bool default_tie;
  double default_eps;
};

// The spec for a config.json model_type; unknown types -> error listing the supported ones.
const ArchSpec& ArchSpecFor(const std::string& model_type);
std::vector<std::string> SupportedModelTypes();
Act ParseAct(const std::string& name, const std::string& where);
// "model.layers.{L}.mlp" -> "model.layers.3.mlp"
std::string ExpandName(const char* pattern, int layer);

}  // namespace pc
