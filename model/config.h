// model/config.h — hyper-parameters from config.json, validated once.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/arch.h"

namespace pc {

// RoPE frequency scaling as transformers' modeling_rope_utils defines it (model/rope.h computes it).
enum class RopeType { kDefault, kLinear, kDynamic, kYarn, kLlama3 };
const char* RopeTypeName(RopeType t);  // transformers' rope_type: "default", "linear", "dynamic", "yarn", "llama3"
struct RopeScaling {
  RopeType type = RopeType::kDefault;
  double factor = 1.0;
  int64_t original_max_pos = 0;   // yarn, llama3: the pre-training context
  double low_freq_factor = 1.0;   // llama3
  double high_freq_factor = 4.0;  // llama3
  double attention_factor = 1.0;  // yarn: cos and sin are multiplied by it (resolved from mscale when absent)
  double beta_fast = 32.0;        // yarn
  double beta_slow = 1.0;         // yarn
  bool truncate = true;           // yarn: the correction range is rounded outwards
};

struct ModelConfig {
  const ArchSpec* arch = nullptr;
  std::string model_type;
  int64_t vocab_size = 0;
  int64_t hidden = 0;        // residual stream width d
  int64_t layers = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;      // grouped-query attention: heads % kv_heads == 0
  int64_t head_dim = 0;
  int64_t intermediate = 0;  // MLP width
  int64_t max_pos = 0;       // context length
  int64_t embed_dim = 0;     // token embedding width (OPT word_embed_proj_dim; = hidden otherwise)
  int64_t rotary_dim = 0;    // rotated dims per head (RoPE): head_dim, or rotary_pct × head_dim (GPT-NeoX)
  double norm_eps = 1e-5;
  double rope_theta = 10000.0;
  RopeScaling rope;                // RoPE models: rope_scaling / rope_parameters
  Act act = Act::kSilu;
  bool tie_embeddings = false;
  bool parallel_residual = false;  // GPT-NeoX use_parallel_residual
  bool pre_norm = true;            // OPT do_layer_norm_before
  bool has_final_norm = true;
  bool scale_attn_weights = true;  // GPT-2
  bool scale_attn_by_layer = false;  // GPT-2 scale_attn_by_inverse_layer_idx
  int64_t sliding_window = 0;        // 0: none
  int64_t max_window_layers = 0;     // Qwen2: layers >= this use the window
  std::vector<uint8_t> window_layers;  // layer_types as read ("sliding_attention": 1); empty: max_window_layers
  int64_t bos_id = -1, eos_id = -1;
  double parallel_scale = 1.0;       // perpcomp_parallel_scale (training with parallel suppression)
  nlohmann::json raw;                // config.json as read, written back on save with updates
  std::string where;                 // the file, for errors

  bool UsesWindow(int layer) const {
    if (sliding_window <= 0) return false;
    return window_layers.empty() ? layer >= max_window_layers : window_layers[layer] != 0;
  }
};

// Validates and derives every field; errors name `where` and the key.
ModelConfig ParseModelConfig(const nlohmann::json& config, const std::string& where);
ModelConfig LoadModelConfig(const std::string& dir);
// A config.json for `c` written with its architecture's keys (the first of each "a|b"): what a converter
// writes (GGUF, llama2.c, the trainer). Fields a table has no key for are not written; ParseModelConfig
// of the result gives `c` back.
nlohmann::json ConfigJsonFor(const ModelConfig& c);

}  // namespace pc
