#include "model/sizes.h"

#include <algorithm>

namespace pc {

LinearDims BlockLinearDims(const ModelConfig& c, Role role) {
  const int64_t q = c.heads * c.head_dim, kv = c.kv_heads * c.head_dim;
  switch (role) {
    case Role::kQ: return {q, c.hidden};
    case Role::kK: case Role::kV: return {kv, c.hidden};
    case Role::kQKV: return {q + 2 * kv, c.hidden};
    case Role::kO: return {c.hidden, q};
    case Role::kGate: case Role::kUp: return {c.intermediate, c.hidden};
    case Role::kDown: return {c.hidden, c.intermediate};
    case Role::kCount: break;
  }
  return {};
}

int64_t DefaultMicroBatch(const ModelConfig& c, int64_t seq_len) {
  const int64_t widest = std::max({c.intermediate, c.heads * seq_len, 3 * c.hidden});
  const int64_t per_window = seq_len * widest * 4 * 3;  // a few live intermediates of the widest kind
  return std::max<int64_t>(1, (64LL << 20) / std::max<int64_t>(1, per_window));
}

int64_t DefaultEvalBatch(const ModelConfig& c, int64_t seq_len) {
  const int64_t per_window = seq_len * c.vocab_size * 4;  // float32 logits
  const int64_t b = std::max<int64_t>(1, (256LL << 20) / std::max<int64_t>(1, per_window));
  return std::min<int64_t>(b, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, seq_len)));
}

}  // namespace pc
