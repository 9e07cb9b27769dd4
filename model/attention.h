// model/attention.h — when the forward's attention is computed over chunks of queries.
//
// Model::Attention (model/model.cc) computes softmax(QKᵀ)V for a chunk of queries at a time when
// the whole score tensor (B, heads, T, S) float32 would exceed AttentionChunkBytes(), so its
// memory grows linearly with the window; each chunk sees the keys up to its last query's position
// and builds its causal (and sliding-window) mask from its positions. A forward whose value hook
// wants the attention probabilities (ForwardHooks::WantsAttention) gets the whole matrix.
// The chunked result equals the whole one within float rounding (tests/model/attention_test.cc).
#pragma once

#include <cstdint>

namespace pc {

inline constexpr int64_t kAttentionChunkBytes = 64LL << 20;

// Process-wide threshold (default kAttentionChunkBytes); tests and benches lower it to run the
// chunked path on short windows. Not meant to change while a forward runs.
void SetAttentionChunkBytes(int64_t bytes);
int64_t AttentionChunkBytes();

}  // namespace pc
