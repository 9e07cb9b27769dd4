#include "model/arch.h"

#include "core/error.h"
#include "core/strings.h"

namespace pc {
namespace {

// ---- Llama (and the Mistral / Qwen2 variants) ------------------------------------------
ArchSpec LlamaLike(const char* model_type, BiasRule qkv_bias) {
  return ArchSpec{
      model_type, NormKind::kRmsNorm, PosKind::kRope, QkvLayout::kSeparate, MlpKind::kGated,
      /*conv1d=*/false, /*pos_offset=*/0,
      "model.embed_tokens.weight", "", "model.norm", "lm_head.weight", "", "",
      "model.layers.{L}.input_layernorm", "model.layers.{L}.post_attention_layernorm",
      "",  // no activation scale group (up -> down absorbs 1/s): no act.scales tensor (as AutoAWQ)
      {
          {Role::kQ, "model.layers.{L}.self_attn.q_proj", qkv_bias},
          {Role::kK, "model.layers.{L}.self_attn.k_proj", qkv_bias},
          {Role::kV, "model.layers.{L}.self_attn.v_proj", qkv_bias},
          {Role::kO, "model.layers.{L}.self_attn.o_proj", BiasRule::kOptional},
          {Role::kGate, "model.layers.{L}.mlp.gate_proj", BiasRule::kOptional},
          {Role::kUp, "model.layers.{L}.mlp.up_proj", BiasRule::kOptional},
          {Role::kDown, "model.layers.{L}.mlp.down_proj", BiasRule::kOptional},
      },
      {"self_attn.rotary_emb.inv_freq"},
      {
          {PrevKind::kAttnNorm, Role::kQ, {Role::kQ, Role::kK, Role::kV}, Inspect::kAttention},
          {PrevKind::kLinear, Role::kV, {Role::kO}, Inspect::kMembers, /*only_if_shapes_match=*/true},
          {PrevKind::kMlpNorm, Role::kQ, {Role::kGate, Role::kUp}, Inspect::kMlp},
          {PrevKind::kLinear, Role::kUp, {Role::kDown}, Inspect::kMembers},
      },
      "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "intermediate_size",
      "max_position_embeddings", "rms_norm_eps", "hidden_act", "silu", /*default_tie=*/false, 1e-6};
}

// ---- GPT-2 ------------------------------------------------------------------------------
ArchSpec Gpt2() {
  return ArchSpec{
      "gpt2", NormKind::kLayerNorm, PosKind::kLearned, QkvLayout::kFusedBlocks, MlpKind::kPlain,
      /*conv1d=*/true, /*pos_offset=*/0,
      "transformer.wte.weight", "transformer.wpe.weight", "transformer.ln_f", "lm_head.weight", "", "",
      "transformer.h.{L}.ln_1", "transformer.h.{L}.ln_2", "transformer.h.{L}.mlp.act.scales",
      {
          {Role::kQKV, "transformer.h.{L}.attn.c_attn", BiasRule::kRequired},
          {Role::kO, "transformer.h.{L}.attn.c_proj", BiasRule::kRequired},
          {Role::kUp, "transformer.h.{L}.mlp.c_fc", BiasRule::kRequired},
          {Role::kDown, "transformer.h.{L}.mlp.c_proj", BiasRule::kRequired},
      },
      {"attn.bias", "attn.masked_bias"},
      {
          {PrevKind::kAttnNorm, Role::kQ, {Role::kQKV}, Inspect::kAttention},
          {PrevKind::kLinear, Role::kQKV, {Role::kO}, Inspect::kMembers},
          {PrevKind::kMlpNorm, Role::kQ, {Role::kUp}, Inspect::kMlp},
          {PrevKind::kActivation, Role::kQ, {Role::kDown}, Inspect::kMembers},
      },
      "n_embd|hidden_size", "n_layer|num_hidden_layers", "n_head|num_attention_heads", "", "n_inner",
      "n_positions|max_position_embeddings", "layer_norm_epsilon", "activation_function", "gelu_new",
      /*default_tie=*/true, 1e-5};
}

// ---- GPT-NeoX (Pythia) --------------------------------------------------------------------
ArchSpec GptNeox() {
  return ArchSpec{
      "gpt_neox", NormKind::kLayerNorm, PosKind::kRope, QkvLayout::kFusedPerHead, MlpKind::kPlain,
      /*conv1d=*/false, /*pos_offset=*/0,
      "gpt_neox.embed_in.weight", "", "gpt_neox.final_layer_norm", "embed_out.weight", "", "",
      "gpt_neox.layers.{L}.input_layernorm", "gpt_neox.layers.{L}.post_attention_layernorm",
      "gpt_neox.layers.{L}.mlp.act.scales",
      {
          {Role::kQKV, "gpt_neox.layers.{L}.attention.query_key_value", BiasRule::kOptional},
          {Role::kO, "gpt_neox.layers.{L}.attention.dense", BiasRule::kOptional},
          {Role::kUp, "gpt_neox.layers.{L}.mlp.dense_h_to_4h", BiasRule::kOptional},
          {Role::kDown, "gpt_neox.layers.{L}.mlp.dense_4h_to_h", BiasRule::kOptional},
      },
      {"attention.bias", "attention.masked_bias", "attention.rotary_emb.inv_freq"},
      {
          // attention.dense is not scaled (llm-awq, issue #2 there).
          {PrevKind::kAttnNorm, Role::kQ, {Role::kQKV}, Inspect::kAttention},
          {PrevKind::kMlpNorm, Role::kQ, {Role::kUp}, Inspect::kMlp},
          {PrevKind::kActivation, Role::kQ, {Role::kDown}, Inspect::kMembers},
      },
      "hidden_size", "num_hidden_layers", "num_attention_heads", "", "intermediate_size",
      "max_position_embeddings", "layer_norm_eps", "hidden_act", "gelu", /*default_tie=*/false, 1e-5};
}

// ---- OPT ----------------------------------------------------------------------------------
ArchSpec Opt() {
  return ArchSpec{
      "opt", NormKind::kLayerNorm, PosKind::kLearned, QkvLayout::kSeparate, MlpKind::kPlain,
      /*conv1d=*/false, /*pos_offset=*/2,
      "model.decoder.embed_tokens.weight", "model.decoder.embed_positions.weight", "model.decoder.final_layer_norm",
      "lm_head.weight", "model.decoder.project_in.weight", "model.decoder.project_out.weight",
      "model.decoder.layers.{L}.self_attn_layer_norm", "model.decoder.layers.{L}.final_layer_norm",
      "",  // no activation scale group (fc1 -> fc2 absorbs 1/s through ReLU)
      {
          {Role::kQ, "model.decoder.layers.{L}.self_attn.q_proj", BiasRule::kOptional},
          {Role::kK, "model.decoder.layers.{L}.self_attn.k_proj", BiasRule::kOptional},
          {Role::kV, "model.decoder.layers.{L}.self_attn.v_proj", BiasRule::kOptional},
          {Role::kO, "model.decoder.layers.{L}.self_attn.out_proj", BiasRule::kOptional},
          {Role::kUp, "model.decoder.layers.{L}.fc1", BiasRule::kOptional},
          {Role::kDown, "model.decoder.layers.{L}.fc2", BiasRule::kOptional},
      },
      {},
      {
          {PrevKind::kAttnNorm, Role::kQ, {Role::kQ, Role::kK, Role::kV}, Inspect::kAttention},
          {PrevKind::kLinear, Role::kV, {Role::kO}, Inspect::kMembers},
          {PrevKind::kMlpNorm, Role::kQ, {Role::kUp}, Inspect::kMembers},
          {PrevKind::kLinear, Role::kUp, {Role::kDown}, Inspect::kMembers},
      },
      "hidden_size", "num_hidden_layers", "num_attention_heads", "", "ffn_dim", "max_position_embeddings",
      "layer_norm_eps", "activation_function", "relu", /*default_tie=*/true, 1e-5};
}

const std::vector<ArchSpec>& Registry() {
  static const std::vector<ArchSpec> specs = {
      LlamaLike("llama", BiasRule::kOptional), LlamaLike("mistral", BiasRule::kNone),
      LlamaLike("qwen2", BiasRule::kRequired), Gpt2(), GptNeox(), Opt(),
  };
  return specs;
}

}  // namespace

int InputIndex(Role r) {
  switch (r) {
    case Role::kQ: case Role::kK: case Role::kV: case Role::kQKV: return 0;
    case Role::kO: return 1;
    case Role::kGate: case Role::kUp: return 2;
    case Role::kDown: return 3;
  }
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

std::string ExpandName(const char* pattern, int layer) {
  return ReplaceAll(pattern, "{L}", std::to_string(layer));
}

}  // namespace pc
