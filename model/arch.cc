#include "model/arch.h"

#include "core/error.h"
#include "core/strings.h"

namespace pc {
namespace {

// ---- Llama and its relatives ------------------------------------------------------------------
// Hugging Face's LlamaForCausalLM layout: RMSNorm, RoPE (halves convention), separate q/k/v,
// gated SiLU MLP. Mistral, Qwen2 and Qwen3 differ from it only where their functions say so.

std::vector<LinearSpec> LlamaLinears(BiasRule qkv_bias) {
  return {
      {Role::kQ, {"model.layers.{L}.self_attn.q_proj", "blk.{L}.attn_q"}, qkv_bias},
      {Role::kK, {"model.layers.{L}.self_attn.k_proj", "blk.{L}.attn_k"}, qkv_bias},
      {Role::kV, {"model.layers.{L}.self_attn.v_proj", "blk.{L}.attn_v"}, qkv_bias},
      {Role::kO, {"model.layers.{L}.self_attn.o_proj", "blk.{L}.attn_output"}, BiasRule::kOptional},
      {Role::kGate, {"model.layers.{L}.mlp.gate_proj", "blk.{L}.ffn_gate"}, BiasRule::kOptional},
      {Role::kUp, {"model.layers.{L}.mlp.up_proj", "blk.{L}.ffn_up"}, BiasRule::kOptional},
      {Role::kDown, {"model.layers.{L}.mlp.down_proj", "blk.{L}.ffn_down"}, BiasRule::kOptional},
  };
}

// AWQ on a Llama block (llm-awq's auto_scale): the input norm absorbs 1/s of q, k, v; v absorbs
// 1/s of o when their shapes match; the post-attention norm absorbs gate and up; up absorbs down.
// No activation scale group, so no act.scales tensor (as AutoAWQ).
std::vector<ScaleGroupSpec> LlamaAwqGroups() {
  return {
      {PrevKind::kAttnNorm, Role::kQ, {Role::kQ, Role::kK, Role::kV}, Inspect::kAttention},
      {PrevKind::kLinear, Role::kV, {Role::kO}, Inspect::kMembers, /*only_if_shapes_match=*/true},
      {PrevKind::kMlpNorm, Role::kQ, {Role::kGate, Role::kUp}, Inspect::kMlp},
      {PrevKind::kLinear, Role::kUp, {Role::kDown}, Inspect::kMembers},
  };
}

ArchSpec Llama() {
  ArchSpec a;
  a.model_type = "llama";
  a.hf_architecture = "LlamaForCausalLM";
  a.gguf_arch = "llama";
  a.gguf_rows = GgufRows::kQkPermuted;

  a.norm = NormKind::kRmsNorm;
  a.pos = PosKind::kRope;
  a.qkv = QkvLayout::kSeparate;
  a.mlp = MlpKind::kGated;

  a.embed = {"model.embed_tokens", "token_embd"};
  a.final_norm = {"model.norm", "output_norm"};
  a.lm_head = {"lm_head", "output"};
  a.attn_norm = {"model.layers.{L}.input_layernorm", "blk.{L}.attn_norm"};
  a.mlp_norm = {"model.layers.{L}.post_attention_layernorm", "blk.{L}.ffn_norm"};
  a.linears = LlamaLinears(BiasRule::kOptional);  // attention_bias
  a.ignorable = {"self_attn.rotary_emb.inv_freq"};

  a.keys.kv_heads = "num_key_value_heads";
  a.keys.head_dim = "head_dim";
  a.keys.norm_eps = "rms_norm_eps";
  a.keys.act = "hidden_act";
  a.keys.rope_theta = "rope_theta";
  a.keys.rope_scaling = "rope_scaling|rope_parameters";  // transformers 4 | 5
  a.defaults.act = "silu";
  a.defaults.norm_eps = 1e-6;
  a.defaults.tie = false;

  a.awq_groups = LlamaAwqGroups();
  return a;
}

// Mistral: Llama without q/k/v biases, with a sliding attention window on every layer.
ArchSpec Mistral() {
  ArchSpec a = Llama();
  a.model_type = "mistral";
  a.hf_architecture = "MistralForCausalLM";
  a.gguf_arch = "llama";  // llama.cpp's converter writes Mistral as llama (permuted q/k)
  a.linears = LlamaLinears(BiasRule::kNone);
  a.keys.sliding_window = "sliding_window";
  a.defaults.sliding_window = 4096;  // transformers' MistralConfig
  return a;
}

// Qwen2: Llama with q/k/v biases and a window on the layers from max_window_layers on
// (when use_sliding_window). llama.cpp rotates halves for qwen2: rows as in the checkpoint.
ArchSpec Qwen2() {
  ArchSpec a = Llama();
  a.model_type = "qwen2";
  a.hf_architecture = "Qwen2ForCausalLM";
  a.gguf_arch = "qwen2";
  a.gguf_rows = GgufRows::kAsHf;
  a.linears = LlamaLinears(BiasRule::kRequired);
  a.keys.sliding_window = "sliding_window";
  a.keys.use_sliding_window = "use_sliding_window";
  a.keys.max_window_layers = "max_window_layers";
  a.defaults.sliding_window = 4096;  // transformers' Qwen2Config / Qwen3Config
  a.defaults.max_window_layers = 28;
  return a;
}

// Qwen3: Qwen2 without q/k/v biases (attention_bias), with a per-head RMSNorm on q and k before
// RoPE; head_dim is its own key (it may differ from hidden / heads).
ArchSpec Qwen3() {
  ArchSpec a = Qwen2();
  a.model_type = "qwen3";
  a.hf_architecture = "Qwen3ForCausalLM";
  a.gguf_arch = "qwen3";
  a.linears = LlamaLinears(BiasRule::kOptional);
  a.qk_norm = true;
  a.q_norm = {"model.layers.{L}.self_attn.q_norm", "blk.{L}.attn_q_norm"};
  a.k_norm = {"model.layers.{L}.self_attn.k_norm", "blk.{L}.attn_k_norm"};
  return a;
}

// ---- GPT-2 --------------------------------------------------------------------------------------
ArchSpec Gpt2() {
  ArchSpec a;
  a.model_type = "gpt2";
  a.hf_architecture = "GPT2LMHeadModel";
  a.gguf_arch = "gpt2";
  a.gguf_rows = GgufRows::kAsHf;

  a.norm = NormKind::kLayerNorm;
  a.pos = PosKind::kLearned;
  a.qkv = QkvLayout::kFusedBlocks;
  a.mlp = MlpKind::kPlain;
  a.conv1d = true;

  a.embed = {"transformer.wte", "token_embd"};
  a.pos_embed = {"transformer.wpe", "position_embd"};
  a.final_norm = {"transformer.ln_f", "output_norm"};
  a.lm_head = {"lm_head", "output"};
  a.attn_norm = {"transformer.h.{L}.ln_1", "blk.{L}.attn_norm"};
  a.mlp_norm = {"transformer.h.{L}.ln_2", "blk.{L}.ffn_norm"};
  a.act_scales = "transformer.h.{L}.mlp.act.scales";
  a.linears = {
      {Role::kQKV, {"transformer.h.{L}.attn.c_attn", "blk.{L}.attn_qkv"}, BiasRule::kRequired},
      {Role::kO, {"transformer.h.{L}.attn.c_proj", "blk.{L}.attn_output"}, BiasRule::kRequired},
      {Role::kUp, {"transformer.h.{L}.mlp.c_fc", "blk.{L}.ffn_up"}, BiasRule::kRequired},
      {Role::kDown, {"transformer.h.{L}.mlp.c_proj", "blk.{L}.ffn_down"}, BiasRule::kRequired},
  };
  a.ignorable = {"attn.bias", "attn.masked_bias"};

  a.keys.hidden = "n_embd|hidden_size";
  a.keys.layers = "n_layer|num_hidden_layers";
  a.keys.heads = "n_head|num_attention_heads";
  a.keys.intermediate = "n_inner";
  a.keys.max_pos = "n_positions|max_position_embeddings";
  a.keys.norm_eps = "layer_norm_epsilon";
  a.keys.act = "activation_function";
  a.keys.scale_attn_weights = "scale_attn_weights";
  a.keys.scale_attn_by_layer = "scale_attn_by_inverse_layer_idx";
  a.defaults.act = "gelu_new";
  a.defaults.norm_eps = 1e-5;
  a.defaults.tie = true;
  a.defaults.intermediate_per_hidden = 4;  // n_inner null

  a.awq_groups = {
      {PrevKind::kAttnNorm, Role::kQ, {Role::kQKV}, Inspect::kAttention},
      {PrevKind::kLinear, Role::kQKV, {Role::kO}, Inspect::kMembers},
      {PrevKind::kMlpNorm, Role::kQ, {Role::kUp}, Inspect::kMlp},
      {PrevKind::kActivation, Role::kQ, {Role::kDown}, Inspect::kMembers},
  };
  return a;
}

// ---- GPT-NeoX (Pythia) ----------------------------------------------------------------------------
ArchSpec GptNeox() {
  ArchSpec a;
  a.model_type = "gpt_neox";
  a.hf_architecture = "GPTNeoXForCausalLM";
  a.gguf_arch = "gptneox";
  a.gguf_rows = GgufRows::kQkvBlocks;

  a.norm = NormKind::kLayerNorm;
  a.pos = PosKind::kRope;
  a.qkv = QkvLayout::kFusedPerHead;
  a.mlp = MlpKind::kPlain;

  a.embed = {"gpt_neox.embed_in", "token_embd"};
  a.final_norm = {"gpt_neox.final_layer_norm", "output_norm"};
  a.lm_head = {"embed_out", "output"};
  a.attn_norm = {"gpt_neox.layers.{L}.input_layernorm", "blk.{L}.attn_norm"};
  a.mlp_norm = {"gpt_neox.layers.{L}.post_attention_layernorm", "blk.{L}.ffn_norm"};
  a.act_scales = "gpt_neox.layers.{L}.mlp.act.scales";
  a.linears = {
      {Role::kQKV, {"gpt_neox.layers.{L}.attention.query_key_value", "blk.{L}.attn_qkv"}, BiasRule::kOptional},
      {Role::kO, {"gpt_neox.layers.{L}.attention.dense", "blk.{L}.attn_output"}, BiasRule::kOptional},
      {Role::kUp, {"gpt_neox.layers.{L}.mlp.dense_h_to_4h", "blk.{L}.ffn_up"}, BiasRule::kOptional},
      {Role::kDown, {"gpt_neox.layers.{L}.mlp.dense_4h_to_h", "blk.{L}.ffn_down"}, BiasRule::kOptional},
  };
  a.ignorable = {"attention.bias", "attention.masked_bias", "attention.rotary_emb.inv_freq"};

  a.keys.norm_eps = "layer_norm_eps";
  a.keys.act = "hidden_act";
  a.keys.rope_theta = "rotary_emb_base|rope_theta";
  a.keys.rope_scaling = "rope_scaling|rope_parameters";  // transformers 4 | 5
  a.keys.rotary_pct = "rotary_pct|partial_rotary_factor";
  a.keys.parallel_residual = "use_parallel_residual";
  a.defaults.act = "gelu";
  a.defaults.norm_eps = 1e-5;
  a.defaults.tie = false;
  a.defaults.rotary_pct = 0.25;
  a.defaults.parallel_residual = true;

  // attention.dense is not scaled (llm-awq, issue #2 there).
  a.awq_groups = {
      {PrevKind::kAttnNorm, Role::kQ, {Role::kQKV}, Inspect::kAttention},
      {PrevKind::kMlpNorm, Role::kQ, {Role::kUp}, Inspect::kMlp},
      {PrevKind::kActivation, Role::kQ, {Role::kDown}, Inspect::kMembers},
  };
  return a;
}

// ---- OPT ----------------------------------------------------------------------------------------
// llama.cpp has no OPT architecture: no GGUF names.
ArchSpec Opt() {
  ArchSpec a;
  a.model_type = "opt";
  a.hf_architecture = "OPTForCausalLM";

  a.norm = NormKind::kLayerNorm;
  a.pos = PosKind::kLearned;
  a.qkv = QkvLayout::kSeparate;
  a.mlp = MlpKind::kPlain;
  a.pos_offset = 2;

  a.embed = {"model.decoder.embed_tokens"};
  a.pos_embed = {"model.decoder.embed_positions"};
  a.project_in = {"model.decoder.project_in"};
  a.project_out = {"model.decoder.project_out"};
  a.final_norm = {"model.decoder.final_layer_norm"};
  a.lm_head = {"lm_head"};
  a.attn_norm = {"model.decoder.layers.{L}.self_attn_layer_norm"};
  a.mlp_norm = {"model.decoder.layers.{L}.final_layer_norm"};
  a.linears = {
      {Role::kQ, {"model.decoder.layers.{L}.self_attn.q_proj"}, BiasRule::kOptional},
      {Role::kK, {"model.decoder.layers.{L}.self_attn.k_proj"}, BiasRule::kOptional},
      {Role::kV, {"model.decoder.layers.{L}.self_attn.v_proj"}, BiasRule::kOptional},
      {Role::kO, {"model.decoder.layers.{L}.self_attn.out_proj"}, BiasRule::kOptional},
      {Role::kUp, {"model.decoder.layers.{L}.fc1"}, BiasRule::kOptional},
      {Role::kDown, {"model.decoder.layers.{L}.fc2"}, BiasRule::kOptional},
  };

  a.keys.intermediate = "ffn_dim";
  a.keys.norm_eps = "layer_norm_eps";
  a.keys.act = "activation_function";
  a.keys.embed_dim = "word_embed_proj_dim";
  a.keys.pre_norm = "do_layer_norm_before";
  a.keys.remove_final_norm = "_remove_final_layer_norm";
  a.keys.norm_affine = "layer_norm_elementwise_affine";
  a.defaults.act = "relu";
  a.defaults.norm_eps = 1e-5;
  a.defaults.tie = true;

  // No activation scale group: fc1 absorbs fc2's 1/s through the ReLU.
  a.awq_groups = {
      {PrevKind::kAttnNorm, Role::kQ, {Role::kQ, Role::kK, Role::kV}, Inspect::kAttention},
      {PrevKind::kLinear, Role::kV, {Role::kO}, Inspect::kMembers},
      {PrevKind::kMlpNorm, Role::kQ, {Role::kUp}, Inspect::kMembers},
      {PrevKind::kLinear, Role::kUp, {Role::kDown}, Inspect::kMembers},
  };
  return a;
}

// Invariants of a table (a bug in this file when they fail).
void CheckSpec(const ArchSpec& a) {
  PC_ASSERT(*a.model_type && a.embed.present() && a.lm_head.present() && a.attn_norm.present() &&
                a.mlp_norm.present() && !a.linears.empty(),
            "architecture table ", a.model_type, " lacks a required name");
  PC_ASSERT(a.qk_norm == (a.q_norm.present() && a.k_norm.present()), "architecture table ", a.model_type,
            ": qk_norm needs q_norm and k_norm names, and they need it");
  PC_ASSERT((a.pos == PosKind::kLearned) == a.pos_embed.present(), "architecture table ", a.model_type,
            ": learned positions need a position table and only they have one");
  PC_ASSERT(a.project_in.present() == a.project_out.present() && a.project_in.present() == (*a.keys.embed_dim != 0),
            "architecture table ", a.model_type, ": project_in, project_out and the embed_dim key come together");
  PC_ASSERT(a.pos == PosKind::kRope || (!*a.keys.rope_theta && !*a.keys.rope_scaling && !*a.keys.rotary_pct),
            "architecture table ", a.model_type, ": RoPE keys on a model without RoPE");
  PC_ASSERT(*a.keys.intermediate || a.defaults.intermediate_per_hidden > 0, "architecture table ", a.model_type,
            ": no intermediate size key and no default");
  PerRole<int> seen{};
  for (const LinearSpec& l : a.linears) {
    PC_ASSERT(l.role != Role::kCount && ++seen[static_cast<int>(l.role)] == 1, "architecture table ", a.model_type,
              ": role ", RoleName(l.role), " twice");
    PC_ASSERT((l.role == Role::kQKV) == (a.qkv != QkvLayout::kSeparate) || l.role > Role::kQKV,
              "architecture table ", a.model_type, ": q/k/v roles do not match the layout");
  }
  // A GGUF name for every module, or for none (llama.cpp does not know the architecture).
  const bool gguf = *a.gguf_arch != 0;
  auto check = [&](const TensorName& n) {
    PC_ASSERT(!n.present() || (*n.gguf != 0) == gguf, "architecture table ", a.model_type, ": ", n.hf,
              gguf ? " has no GGUF name" : " has a GGUF name but the table no gguf_arch");
  };
  for (const TensorName* n : {&a.embed, &a.pos_embed, &a.project_in, &a.project_out, &a.final_norm, &a.lm_head,
                              &a.attn_norm, &a.mlp_norm, &a.q_norm, &a.k_norm}) {
    check(*n);
  }
  for (const LinearSpec& l : a.linears) check(l.name);
}

const std::vector<ArchSpec>& Registry() {
  static const std::vector<ArchSpec> specs = [] {
    std::vector<ArchSpec> s = {Llama(), Mistral(), Qwen2(), Qwen3(), Gpt2(), GptNeox(), Opt()};
    for (const ArchSpec& a : s) CheckSpec(a);
    return s;
  }();
  return specs;
}

}  // namespace

std::string WeightOf(const std::string& module) { return module + ".weight"; }
std::string BiasOf(const std::string& module) { return module + ".bias"; }

int InputIndex(Role r) {
  switch (r) {
    case Role::kQ: case Role::kK: case Role::kV: case Role::kQKV: return 0;
    case Role::kO: return 1;
    case Role::kGate: case Role::kUp: return 2;
    case Role::kDown: return 3;
    case Role::kCount: break;
  }
  PC_ASSERT(false, "InputIndex of Role::kCount");
  return 0;
}

const char* RoleName(Role r) {
  switch (r) {
    case Role::kQ: return "q";
    case Role::kK: return "k";
    case Role::kV: return "v";
    case Role::kQKV: return "qkv";
    case Role::kO: return "o";
    case Role::kGate: return "gate";
    case Role::kUp: return "up";
    case Role::kDown: return "down";
    case Role::kCount: break;
  }
  return "?";
}

const char* ActName(Act a) {
  switch (a) {
    case Act::kSilu: return "silu";
    case Act::kGeluErf: return "gelu";
    case Act::kGeluTanh: return "gelu_new";
    case Act::kRelu: return "relu";
  }
  return "?";
}

Act ParseAct(const std::string& name, const std::string& where) {
  if (name == "silu" || name == "swish") return Act::kSilu;
  if (name == "gelu") return Act::kGeluErf;
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast") return Act::kGeluTanh;
  if (name == "relu") return Act::kRelu;
  PC_THROW(where, ": unsupported activation '", name, "' (supported: silu, gelu, gelu_new, gelu_pytorch_tanh, relu)");
}

const std::vector<ArchSpec>& AllArchSpecs() { return Registry(); }

const ArchSpec& ArchSpecFor(const std::string& model_type) {
  for (const auto& s : Registry()) {
    if (model_type == s.model_type) return s;
  }
  PC_THROW("unsupported model_type '", model_type, "' (supported: ", Join(SupportedModelTypes(), ", "), ")");
}

std::vector<std::string> SupportedModelTypes() {
  std::vector<std::string> out;
  for (const auto& s : Registry()) out.push_back(s.model_type);
  return out;
}

const ArchSpec* ArchSpecForGguf(const std::string& general_architecture) {
  for (const auto& s : Registry()) {
    if (*s.gguf_arch && general_architecture == s.gguf_arch) return &s;
  }
  return nullptr;
}

std::vector<ModuleName> ModuleNames(const ArchSpec& a, int64_t layers) {
  std::vector<ModuleName> out;
  auto add = [&](const TensorName& n, int layer) {
    if (n.present()) out.push_back({ExpandName(n.hf, layer), ExpandName(n.gguf, layer), layer});
  };
  for (const TensorName* n : {&a.embed, &a.pos_embed, &a.project_in, &a.project_out, &a.final_norm, &a.lm_head}) {
    add(*n, -1);
  }
  for (int l = 0; l < layers; ++l) {
    for (const TensorName* n : {&a.attn_norm, &a.mlp_norm, &a.q_norm, &a.k_norm}) add(*n, l);
    for (const LinearSpec& s : a.linears) add(s.name, l);
  }
  return out;
}

std::string ExpandName(const char* pattern, int layer) {
  return ReplaceAll(pattern, "{L}", std::to_string(layer));
}

}  // namespace pc
