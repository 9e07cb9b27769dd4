#include "model/config.h"

#include "core/error.h"
#include "core/fs.h"
#include "core/json_util.h"
#include "core/strings.h"

namespace pc {
namespace {

// The first present, non-null key of "a|b|c", or nullptr.
const nlohmann::json* FindKey(const nlohmann::json& j, const std::string& keys) {
  if (keys.empty()) return nullptr;
  for (const auto& k : Split(keys, '|')) {
    auto it = j.find(k);
    if (it != j.end() && !it->is_null()) return &*it;
  }
  return nullptr;
}

// "'a' (or 'b', 'c')"
std::string KeysText(const std::string& keys) {
  auto parts = Split(keys, '|');
  std::string out = "'" + parts[0] + "'";
  if (parts.size() > 1) out += " (or '" + Join(std::vector<std::string>(parts.begin() + 1, parts.end()), "', '") + "')";
  return out;
}

int64_t GetInt(const nlohmann::json& j, const std::string& keys, int64_t fallback, bool required,
               const std::string& where) {
  const nlohmann::json* v = FindKey(j, keys);
  if (v == nullptr) {
    PC_CHECK(!required, where, ": missing ", KeysText(keys));
    return fallback;
  }
  PC_CHECK(v->is_number_integer(), where, ": ", KeysText(keys), " is ", v->dump(), ", expected an integer");
  return v->get<int64_t>();
}

double GetDouble(const nlohmann::json& j, const std::string& keys, double fallback, const std::string& where) {
  const nlohmann::json* v = FindKey(j, keys);
  if (v == nullptr) return fallback;
  PC_CHECK(v->is_number(), where, ": ", KeysText(keys), " is ", v->dump(), ", expected a number");
  return v->get<double>();
}

bool GetBool(const nlohmann::json& j, const std::string& keys, bool fallback, const std::string& where) {
  const nlohmann::json* v = FindKey(j, keys);
  if (v == nullptr) return fallback;
  PC_CHECK(v->is_boolean(), where, ": ", KeysText(keys), " is ", v->dump(), ", expected true or false");
  return v->get<bool>();
}

void CheckPositive(int64_t v, const char* name, const std::string& where) {
  PC_CHECK(v > 0, where, ": ", name, " must be positive, got ", v);
  PC_CHECK(v <= (int64_t{1} << 24), where, ": ", name, " = ", v, " is implausibly large");
}

}  // namespace

ModelConfig ParseModelConfig(const nlohmann::json& j, const std::string& where) {
  PC_CHECK(j.is_object(), where, ": expected a JSON object");
  ModelConfig c;
  c.raw = j;
  c.where = where;
  c.model_type = JsonString(j, "model_type", where);
  c.arch = &ArchSpecFor(c.model_type);
  const ArchSpec& a = *c.arch;
  c.vocab_size = GetInt(j, "vocab_size", 0, true, where);
  c.hidden = GetInt(j, a.hidden_keys, 0, true, where);
  c.layers = GetInt(j, a.layers_keys, 0, true, where);
  c.heads = GetInt(j, a.heads_keys, 0, true, where);
  CheckPositive(c.vocab_size, "vocab_size", where);
  CheckPositive(c.hidden, "hidden size", where);
  CheckPositive(c.layers, "number of layers", where);
  CheckPositive(c.heads, "number of heads", where);
  c.kv_heads = GetInt(j, a.kv_heads_keys, c.heads, false, where);
  CheckPositive(c.kv_heads, "number of key/value heads", where);
  PC_CHECK(c.heads % c.kv_heads == 0, where, ": num_attention_heads ", c.heads,
           " is not a multiple of num_key_value_heads ", c.kv_heads);
  c.head_dim = GetInt(j, "head_dim", 0, false, where);
  if (c.head_dim == 0) {
    PC_CHECK(c.hidden % c.heads == 0, where, ": hidden size ", c.hidden, " is not a multiple of the ", c.heads,
             " heads");
    c.head_dim = c.hidden / c.heads;
  }
  CheckPositive(c.head_dim, "head_dim", where);
  c.intermediate = GetInt(j, a.intermediate_keys, c.model_type == "gpt2" ? 4 * c.hidden : 0,
                          c.model_type != "gpt2", where);
  CheckPositive(c.intermediate, "intermediate size", where);
  c.max_pos = GetInt(j, a.max_pos_keys, 2048, a.pos == PosKind::kLearned, where);
  CheckPositive(c.max_pos, "max_position_embeddings", where);
  c.norm_eps = GetDouble(j, a.eps_keys, a.default_eps, where);
  PC_CHECK(c.norm_eps > 0 && c.norm_eps < 1, where, ": norm epsilon ", c.norm_eps, " must lie in (0, 1)");
  const nlohmann::json* act = FindKey(j, a.act_keys);
  std::string act_name = a.default_act;
  if (act != nullptr) {
    PC_CHECK(act->is_string(), where, ": '", a.act_keys, "' must be a string");
    act_name = act->get<std::string>();
  }
  c.act = ParseAct(act_name, where);
  c.tie_embeddings = GetBool(j, "tie_word_embeddings", a.default_tie, where);
  c.embed_dim = c.hidden;
  c.rotary_dim = c.head_dim;

  // transformers >= 5 writes RoPE settings as "rope_parameters": {rope_type, rope_theta,
  // partial_rotary_factor, ...}; older configs have them at the top level.
  const nlohmann::json* rope_params = FindKey(j, "rope_parameters");
  PC_CHECK(rope_params == nullptr || rope_params->is_object(), where, ": rope_parameters must be an object");
  const nlohmann::json& rope = rope_params != nullptr ? *rope_params : j;
  if (a.pos == PosKind::kRope) {
    c.rope_theta = GetDouble(rope, "rope_theta|rotary_emb_base", GetDouble(j, "rope_theta|rotary_emb_base", 10000.0, where),
                             where);
    PC_CHECK(c.rope_theta > 0, where, ": rope_theta must be positive");
    const nlohmann::json* scaling = FindKey(j, "rope_scaling");
    PC_CHECK(scaling == nullptr, where, ": rope_scaling ", scaling ? scaling->dump() : "",
             " is not supported (only unscaled RoPE)");
    const nlohmann::json* type = rope_params != nullptr ? FindKey(*rope_params, "rope_type") : nullptr;
    PC_CHECK(type == nullptr || (type->is_string() && type->get<std::string>() == "default"), where,
             ": rope_parameters ", rope_params ? rope_params->dump() : "", " is not supported (only rope_type default)");
  }
  if (c.model_type == "gpt_neox") {
    double pct = GetDouble(rope, "rotary_pct|partial_rotary_factor",
                           GetDouble(j, "rotary_pct|partial_rotary_factor", 0.25, where), where);
    PC_CHECK(pct > 0 && pct <= 1, where, ": rotary_pct ", pct, " must lie in (0, 1]");
    c.rotary_dim = static_cast<int64_t>(c.head_dim * pct);
    PC_CHECK(c.rotary_dim % 2 == 0 && c.rotary_dim > 0, where, ": rotary_pct ", pct, " x head_dim ", c.head_dim,
             " gives ", c.rotary_dim, " rotary dims; expected a positive even number");
    c.parallel_residual = GetBool(j, "use_parallel_residual", true, where);
  }
  if (c.model_type == "gpt2") {
    c.scale_attn_weights = GetBool(j, "scale_attn_weights", true, where);
    c.scale_attn_by_layer = GetBool(j, "scale_attn_by_inverse_layer_idx", false, where);
  }
  if (c.model_type == "opt") {
    c.embed_dim = GetInt(j, "word_embed_proj_dim", c.hidden, false, where);
    CheckPositive(c.embed_dim, "word_embed_proj_dim", where);
    c.pre_norm = GetBool(j, "do_layer_norm_before", true, where);
    c.has_final_norm = c.pre_norm && !GetBool(j, "_remove_final_layer_norm", false, where);
    PC_CHECK(GetBool(j, "layer_norm_elementwise_affine", true, where), where,
             ": layer_norm_elementwise_affine false is not supported");
  }
  if (c.model_type == "mistral") {
    c.sliding_window = GetInt(j, "sliding_window", 0, false, where);
  }
  if (c.model_type == "qwen2" && GetBool(j, "use_sliding_window", false, where)) {
    c.sliding_window = GetInt(j, "sliding_window", 0, false, where);
    c.max_window_layers = GetInt(j, "max_window_layers", 0, false, where);
  }
  PC_CHECK(c.sliding_window >= 0, where, ": sliding_window must not be negative");
  // bos/eos: an integer, or a list whose first entry counts (Llama-3 style), or absent.
  auto special = [&](const char* key) -> int64_t {
    const nlohmann::json* v = FindKey(j, key);
    if (v != nullptr && v->is_array() && !v->empty()) v = &(*v)[0];
    if (v == nullptr || !v->is_number_integer()) return -1;
    return v->get<int64_t>();
  };
  c.bos_id = special("bos_token_id");
  c.eos_id = special("eos_token_id");
  c.parallel_scale = GetDouble(j, "perpcomp_parallel_scale", 1.0, where);
  return c;
}

ModelConfig LoadModelConfig(const std::string& dir) {
  std::string path = fs::Join(dir, "config.json");
  PC_CHECK(fs::Exists(dir), "model folder '", dir, "' does not exist");
  PC_CHECK(fs::Exists(path), "'", dir, "' has no config.json (expected a Hugging Face model folder)");
  return ParseModelConfig(LoadJsonFile(path), path);
}

}  // namespace pc
