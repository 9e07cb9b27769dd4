// model/config.h — hyper-parameters from config.json, validated once.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "model/arch.h"

namespace pc {

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
  Act act = Act::kSilu;
  bool tie_embeddings = false;
  bool parallel_residual = false;  // GPT-NeoX use_parallel_residual
  bool pre_norm = true;            // OPT do_layer_norm_before
  bool has_final_norm = true;
  bool scale_attn_weights = true;  // GPT-2
  bool scale_attn_by_layer = false;  // GPT-2 scale_attn_by_inverse_layer_idx
  int64_t sliding_window = 0;        // 0: none
  int64_t max_window_layers = 0;     // Qwen2: layers >= this use the window
  int64_t bos_id = -1, eos_id = -1;
  double parallel_scale = 1.0;       // perpcomp_parallel_scale (training with parallel suppression)
  nlohmann::json raw;                // config.json as read, written back on save with updates
  std::string where;                 // the file, for errors

  bool UsesWindow(int layer) const { return sliding_window > 0 && layer >= max_window_layers; }
};

// Validates and derives every field; errors name `where` and the key.
ModelConfig ParseModelConfig(const nlohmann::json& config, const std::string& where);
ModelConfig LoadModelConfig(const std::string& dir);

}  // namespace pc
