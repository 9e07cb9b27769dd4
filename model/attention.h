// model/attention.h — when the forward's attention is computed over chunks of queries.
//
// Model::Attention (model/model.cc) computes softmax(QKᵀ)V for a chunk of queries at a time when
// the whole score tensor (B, heads, T, S) float32 would exceed AttentionChunkBytes(), so its
// memory grows linearly with the window; each chunk sees the keys up to its last query's position
// and builds its causal (and sliding-window) mask from its positions. A forward whose value hook
// wants the attention probabilities (ForwardHooks::WantsAttention) gets the whole matrix.
// The chunked result equals the whole one within float rounding (tests/model/attention_test.cc).
//
// The threshold is small for speed, not only for memory: a chunk's scores of 4 MiB stay in the
// caches between QKᵀ, the softmax and the product with V, where a chunk of 64 MiB (the earlier
// threshold) went to memory three times. On SmolLM2-135M, one window of 2048 tokens, 2 threads, a
// Xeon with 2 MiB of L2 per core: forward 3.9–4.2 s against 6.2–7.3 s; 1024 tokens 1.6 s against
// 2.7–2.8 s; 512 tokens unchanged (docs/PERFORMANCE.md "Attention in chunks that stay in cache").
#pragma once

#include <cstdint>

namespace pc {

inline constexpr int64_t kAttentionChunkBytes = 4LL << 20;

// Process-wide threshold (default kAttentionChunkBytes); tests lower it to run the chunked path on
// short windows, forward_bench (--attention-chunk-bytes) compares sizes. Not meant to change while
// a forward runs.
void SetAttentionChunkBytes(int64_t bytes);
int64_t AttentionChunkBytes();

}  // namespace pc
