// model/rope.h — RoPE inverse frequencies as transformers' modeling_rope_utils computes them, for
// the rope types ModelConfig::rope holds (default, linear, dynamic, yarn, llama3). No LibTorch.
//
// Dynamic NTK depends on the sequence length. transformers (5.x, dynamic_rope_update) recomputes the
// frequencies when a forward's last position + 1 exceeds the longest length it has seen, and returns
// to the original ones when a forward is shorter than max_position_embeddings; between the two it
// keeps the longest length's frequencies (state across calls). perpcomp has no such state: every
// forward uses the frequencies for its own last position + 1 (start + length). The two agree on a
// fresh model, on any forward no longer than max_position_embeddings, and on incremental decoding
// (each step is longer than the last); keys already in a KV cache keep the rotation they were given,
// as in transformers.
#pragma once

#include <cstdint>
#include <vector>

#include "model/config.h"

namespace pc {

struct RopeFrequencies {
  std::vector<double> inv_freq;   // (rotary_dim / 2,)
  double attention_scaling = 1.0;  // cos and sin are multiplied by it (yarn)
};

// The frequencies for a forward whose positions end at seq_len - 1.
RopeFrequencies ComputeRope(const ModelConfig& c, int64_t seq_len);
// True when ComputeRope depends on seq_len (dynamic NTK beyond max_position_embeddings).
bool RopeDependsOnLength(const ModelConfig& c);

}  // namespace pc
