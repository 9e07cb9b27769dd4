#include "model/config.h"

#include <cmath>

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

// The first of `keys` ("a|b") as the key a writer uses.
std::string FirstKey(const char* keys) { return Split(keys, '|')[0]; }

// transformers' rope_scaling (v4) or rope_parameters (v5) object: the first non-empty one counts
// (transformers 5 takes rope_scaling over rope_parameters). An empty object when there is none.
nlohmann::json RopeObject(const nlohmann::json& j, const std::string& keys, const std::string& where) {
  if (keys.empty()) return nlohmann::json::object();
  for (const auto& k : Split(keys, '|')) {
    auto it = j.find(k);
    if (it == j.end() || it->is_null()) continue;
    PC_CHECK(it->is_object(), where, ": '", k, "' is ", it->dump(), ", expected an object");
    if (!it->empty()) return *it;
  }
  return nlohmann::json::object();
}

// rope_scaling as transformers' RotaryEmbeddingConfigMixin.standardize_rope_params and the
// _compute_*_parameters functions of modeling_rope_utils read it.
RopeScaling ParseRope(const nlohmann::json& j, const nlohmann::json& r, int64_t max_pos, const std::string& where) {
  RopeScaling s;
  std::string type = "default";
  if (const nlohmann::json* t = FindKey(r, "rope_type|type")) {
    PC_CHECK(t->is_string(), where, ": rope_type is ", t->dump(), ", expected a string");
    type = t->get<std::string>();
  }
  const std::string in = where + ": rope_scaling (" + type + ")";
  auto number = [&](const char* key, bool required, double fallback) {
    const nlohmann::json* v = FindKey(r, key);
    PC_CHECK(v != nullptr || !required, in, " needs '", key, "'");
    if (v == nullptr) return fallback;
    PC_CHECK(v->is_number(), in, ": '", key, "' is ", v->dump(), ", expected a number");
    return v->get<double>();
  };
  // The pre-training context: a top-level original_max_position_embeddings wins (Phi-3 style), then
  // the object's, then max_position_embeddings.
  auto original = [&]() {
    int64_t o = GetInt(j, "original_max_position_embeddings", 0, false, where);
    if (o == 0) o = GetInt(r, "original_max_position_embeddings", max_pos, false, in);
    CheckPositive(o, "original_max_position_embeddings", in);
    return o;
  };
  if (type == "default") return s;
  if (type == "linear" || type == "dynamic") {
    s.type = type == "linear" ? RopeType::kLinear : RopeType::kDynamic;
    s.factor = number("factor", true, 1.0);
  } else if (type == "llama3") {
    s.type = RopeType::kLlama3;
    s.factor = number("factor", true, 1.0);
    s.low_freq_factor = number("low_freq_factor", true, 1.0);
    s.high_freq_factor = number("high_freq_factor", true, 4.0);
    s.original_max_pos = original();
    PC_CHECK(s.high_freq_factor != s.low_freq_factor, in, ": high_freq_factor equals low_freq_factor");
  } else if (type == "yarn") {
    s.type = RopeType::kYarn;
    s.original_max_pos = original();
    PC_CHECK(r.contains("factor"), in, " needs 'factor'");
    // factor null: the ratio of the contexts (DeepSeek-V3 style).
    s.factor = r["factor"].is_null() ? static_cast<double>(max_pos) / s.original_max_pos : number("factor", true, 1.0);
    auto mscale = [](double scale, double m) { return scale <= 1 ? 1.0 : 0.1 * m * std::log(scale) + 1.0; };
    const double m = number("mscale", false, 0), m_all = number("mscale_all_dim", false, 0);
    s.attention_factor = number("attention_factor", false,
                                m != 0 && m_all != 0 ? mscale(s.factor, m) / mscale(s.factor, m_all) : mscale(s.factor, 1));
    // beta_fast / beta_slow: `or` defaults in transformers (0 or null gives the default).
    s.beta_fast = number("beta_fast", false, 0);
    if (s.beta_fast == 0) s.beta_fast = 32;
    s.beta_slow = number("beta_slow", false, 0);
    if (s.beta_slow == 0) s.beta_slow = 1;
    s.truncate = GetBool(r, "truncate", true, in);
  } else {
    PC_THROW(where, ": rope_scaling type '", type, "' is not supported (supported: default, linear, dynamic, yarn, llama3)");
  }
  PC_CHECK(std::isfinite(s.factor) && s.factor > 0, in, ": factor ", s.factor, " must be positive");
  return s;
}

}  // namespace

const char* RopeTypeName(RopeType t) {
  switch (t) {
    case RopeType::kDefault: return "default";
    case RopeType::kLinear: return "linear";
    case RopeType::kDynamic: return "dynamic";
    case RopeType::kYarn: return "yarn";
    case RopeType::kLlama3: return "llama3";
  }
  return "?";
}

ModelConfig ParseModelConfig(const nlohmann::json& j, const std::string& where) {
  PC_CHECK(j.is_object(), where, ": expected a JSON object");
  ModelConfig c;
  c.raw = j;
  c.where = where;
  c.model_type = JsonString(j, "model_type", where);
  c.arch = &ArchSpecFor(c.model_type);
  const ArchSpec& a = *c.arch;
  const ConfigKeys& k = a.keys;
  const ConfigDefaults& d = a.defaults;
  c.vocab_size = GetInt(j, "vocab_size", 0, true, where);
  c.hidden = GetInt(j, k.hidden, 0, true, where);
  c.layers = GetInt(j, k.layers, 0, true, where);
  c.heads = GetInt(j, k.heads, 0, true, where);
  CheckPositive(c.vocab_size, "vocab_size", where);
  CheckPositive(c.hidden, "hidden size", where);
  CheckPositive(c.layers, "number of layers", where);
  CheckPositive(c.heads, "number of heads", where);
  c.kv_heads = GetInt(j, k.kv_heads, c.heads, false, where);
  CheckPositive(c.kv_heads, "number of key/value heads", where);
  PC_CHECK(c.heads % c.kv_heads == 0, where, ": num_attention_heads ", c.heads,
           " is not a multiple of num_key_value_heads ", c.kv_heads);
  c.head_dim = GetInt(j, k.head_dim, 0, false, where);
  if (c.head_dim == 0) {
    PC_CHECK(c.hidden % c.heads == 0, where, ": hidden size ", c.hidden, " is not a multiple of the ", c.heads,
             " heads");
    c.head_dim = c.hidden / c.heads;
  }
  CheckPositive(c.head_dim, "head_dim", where);
  c.intermediate = GetInt(j, k.intermediate, d.intermediate_per_hidden * c.hidden, d.intermediate_per_hidden == 0, where);
  CheckPositive(c.intermediate, "intermediate size", where);
  c.max_pos = GetInt(j, k.max_pos, d.max_pos, a.pos == PosKind::kLearned, where);
  CheckPositive(c.max_pos, "max_position_embeddings", where);
  c.norm_eps = GetDouble(j, k.norm_eps, d.norm_eps, where);
  PC_CHECK(c.norm_eps > 0 && c.norm_eps < 1, where, ": norm epsilon ", c.norm_eps, " must lie in (0, 1)");
  const nlohmann::json* act = FindKey(j, k.act);
  std::string act_name = d.act;
  if (act != nullptr) {
    PC_CHECK(act->is_string(), where, ": '", k.act, "' must be a string");
    act_name = act->get<std::string>();
  }
  c.act = ParseAct(act_name, where);
  c.tie_embeddings = GetBool(j, k.tie, d.tie, where);
  c.embed_dim = GetInt(j, k.embed_dim, c.hidden, false, where);
  CheckPositive(c.embed_dim, "word_embed_proj_dim", where);
  c.rotary_dim = c.head_dim;

  if (a.pos == PosKind::kRope) {
    // transformers 5 keeps rope_theta and partial_rotary_factor in the rope object; a top-level key
    // fills in what the object lacks.
    const nlohmann::json rope = RopeObject(j, k.rope_scaling, where);
    c.rope_theta = GetDouble(rope, "rope_theta", GetDouble(j, k.rope_theta, 10000.0, where), where);
    PC_CHECK(c.rope_theta > 0, where, ": rope_theta must be positive");
    c.rope = ParseRope(j, rope, c.max_pos, where);
    if (*k.rotary_pct) {
      double pct = GetDouble(rope, "partial_rotary_factor", GetDouble(j, k.rotary_pct, d.rotary_pct, where), where);
      PC_CHECK(pct > 0 && pct <= 1, where, ": rotary_pct ", pct, " must lie in (0, 1]");
      c.rotary_dim = static_cast<int64_t>(c.head_dim * pct);
      PC_CHECK(c.rotary_dim % 2 == 0 && c.rotary_dim > 0, where, ": rotary_pct ", pct, " x head_dim ", c.head_dim,
               " gives ", c.rotary_dim, " rotary dims; expected a positive even number");
    } else {
      // Llama-style attention rotates whole heads: transformers' default RoPE ignores a partial_rotary_factor
      // and its scaled RoPE types fail on one below 1.
      double pct = GetDouble(rope, "partial_rotary_factor", GetDouble(j, "partial_rotary_factor", 1.0, where), where);
      PC_CHECK(pct == 1.0 || c.rope.type == RopeType::kDefault, where, ": partial_rotary_factor ", pct,
               " with rope_type ", RopeTypeName(c.rope.type), " is not supported by ", c.model_type,
               " attention (whole heads are rotated)");
    }
    PC_CHECK(c.rope.type != RopeType::kDynamic || c.rotary_dim > 2, where, ": dynamic rope_scaling needs more than 2 rotary dims");
  }
  c.parallel_residual = GetBool(j, k.parallel_residual, d.parallel_residual, where);
  c.scale_attn_weights = GetBool(j, k.scale_attn_weights, true, where);
  c.scale_attn_by_layer = GetBool(j, k.scale_attn_by_layer, false, where);
  c.pre_norm = GetBool(j, k.pre_norm, true, where);
  c.has_final_norm = c.pre_norm && !GetBool(j, k.remove_final_norm, false, where);
  PC_CHECK(GetBool(j, k.norm_affine, true, where), where, ": ", k.norm_affine, " false is not supported");
  if (!*k.use_sliding_window || GetBool(j, k.use_sliding_window, false, where)) {
    // sliding_window: absent -> the architecture's default; null -> no window.
    c.sliding_window = d.sliding_window;
    for (const auto& key : *k.sliding_window ? Split(k.sliding_window, '|') : std::vector<std::string>{}) {
      auto it = j.find(key);
      if (it == j.end()) continue;
      c.sliding_window = it->is_null() ? 0 : GetInt(j, key, 0, true, where);
      break;
    }
    if (!*k.sliding_window) c.sliding_window = 0;
    c.max_window_layers = GetInt(j, k.max_window_layers, d.max_window_layers, false, where);
    // transformers 5 writes the per-layer choice as layer_types; when present it decides.
    const nlohmann::json* types = *k.max_window_layers ? FindKey(j, "layer_types") : nullptr;
    if (types != nullptr && c.sliding_window > 0) {
      PC_CHECK(types->is_array() && static_cast<int64_t>(types->size()) == c.layers, where, ": layer_types must list ",
               c.layers, " layers");
      for (const auto& t : *types) {
        PC_CHECK(t == "sliding_attention" || t == "full_attention", where, ": layer_types entry ", t.dump(),
                 " (expected \"sliding_attention\" or \"full_attention\")");
        c.window_layers.push_back(t == "sliding_attention" ? 1 : 0);
      }
    }
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

nlohmann::json ConfigJsonFor(const ModelConfig& c) {
  PC_ASSERT(c.arch != nullptr, "config without an architecture");
  const ArchSpec& a = *c.arch;
  const ConfigKeys& k = a.keys;
  nlohmann::json j = {{"model_type", a.model_type}, {"architectures", {a.hf_architecture}}, {"vocab_size", c.vocab_size}};
  auto put = [&](const char* keys, const nlohmann::json& v) {
    if (*keys) j[FirstKey(keys)] = v;
  };
  put(k.hidden, c.hidden);
  put(k.layers, c.layers);
  put(k.heads, c.heads);
  put(k.kv_heads, c.kv_heads);
  put(k.head_dim, c.head_dim);
  put(k.intermediate, c.intermediate);
  put(k.max_pos, c.max_pos);
  put(k.norm_eps, c.norm_eps);
  put(k.act, ActName(c.act));
  put(k.tie, c.tie_embeddings);
  if (a.pos == PosKind::kRope) {
    put(k.rope_theta, c.rope_theta);
    put(k.rotary_pct, static_cast<double>(c.rotary_dim) / static_cast<double>(c.head_dim));
    const RopeScaling& r = c.rope;
    nlohmann::json s = {{"rope_type", RopeTypeName(r.type)}};
    switch (r.type) {
      case RopeType::kDefault: s = nullptr; break;
      case RopeType::kLinear: case RopeType::kDynamic: s["factor"] = r.factor; break;
      case RopeType::kLlama3:
        s["factor"] = r.factor;
        s["low_freq_factor"] = r.low_freq_factor;
        s["high_freq_factor"] = r.high_freq_factor;
        s["original_max_position_embeddings"] = r.original_max_pos;
        break;
      case RopeType::kYarn:
        s["factor"] = r.factor;
        s["original_max_position_embeddings"] = r.original_max_pos;
        s["attention_factor"] = r.attention_factor;
        s["beta_fast"] = r.beta_fast;
        s["beta_slow"] = r.beta_slow;
        s["truncate"] = r.truncate;
        break;
    }
    if (!s.is_null()) put(k.rope_scaling, s);
  }
  put(k.parallel_residual, c.parallel_residual);
  put(k.scale_attn_weights, c.scale_attn_weights);
  put(k.scale_attn_by_layer, c.scale_attn_by_layer);
  put(k.embed_dim, c.embed_dim);
  put(k.pre_norm, c.pre_norm);
  if (c.pre_norm) put(k.remove_final_norm, !c.has_final_norm);
  if (c.sliding_window > 0) {
    put(k.use_sliding_window, true);
    put(k.sliding_window, c.sliding_window);
    put(k.max_window_layers, c.max_window_layers);
    if (!c.window_layers.empty()) {
      nlohmann::json types = nlohmann::json::array();
      for (uint8_t w : c.window_layers) types.push_back(w ? "sliding_attention" : "full_attention");
      j["layer_types"] = types;
    }
  } else {
    put(k.use_sliding_window, false);
    put(k.sliding_window, nullptr);  // absent would mean the architecture's default window
  }
  if (c.bos_id >= 0) j["bos_token_id"] = c.bos_id;
  if (c.eos_id >= 0) j["eos_token_id"] = c.eos_id;
  if (c.parallel_scale != 1.0) j["perpcomp_parallel_scale"] = c.parallel_scale;
  return j;
}

ModelConfig LoadModelConfig(const std::string& dir) {
  std::string path = fs::Join(dir, "config.json");
  PC_CHECK(fs::Exists(dir), "model folder '", dir, "' does not exist");
  PC_CHECK(fs::Exists(path), "'", dir, "' has no config.json (expected a Hugging Face model folder)");
  return ParseModelConfig(LoadJsonFile(path), path);
}

}  // namespace pc
