// Query-chunked attention (model/attention.h) against the whole score matrix: the same logits
// within float rounding on every attention variant the seeded models carry (grouped key/value
// heads, a sliding window on every layer or on some, GPT-2's per-layer scale, learned positions,
// post-LN), for chunks that divide the window unevenly and for single-query chunks, in a plain
// forward and in KV-cache steps that start past position 0.
#include <catch2/catch.hpp>

#include <ATen/ATen.h>

#include "model/attention.h"
#include "model/model.h"
#include "tests/model/model_test_util.h"

namespace {

// Chunked and whole attention add the same terms in another blocking: float32 rounding of
// logits of magnitude ~10 (observed differences ~1e-6).
constexpr double kMaxAbsLogitDiff = 1e-4;

// Restores the process-wide threshold when a test ends.
struct ChunkBytes {
  explicit ChunkBytes(int64_t bytes) { pc::SetAttentionChunkBytes(bytes); }
  ~ChunkBytes() { pc::SetAttentionChunkBytes(pc::kAttentionChunkBytes); }
};

double MaxAbsDiff(const at::Tensor& a, const at::Tensor& b) { return (a - b).abs().max().item<double>(); }

// Logits of a prompt of `first` tokens then the rest in one step, through a KV cache.
at::Tensor CachedLogits(pc::Model& m, const at::Tensor& tokens, int64_t first) {
  pc::KvCache cache = m.MakeCache(tokens.size(0), tokens.size(1));
  pc::ForwardContext a = m.MakeContext(first, 0, nullptr, &cache);
  at::Tensor la = m.Forward(tokens.narrow(1, 0, first), a);
  pc::ForwardContext b = m.MakeContext(tokens.size(1) - first, 0, nullptr, &cache);
  at::Tensor lb = m.Forward(tokens.narrow(1, first, tokens.size(1) - first), b);
  return at::cat({la, lb}, 1);
}

}  // namespace

TEST_CASE("query-chunked attention equals the whole score matrix within float rounding", "[model]") {
  auto [arch, variant] = GENERATE(table<std::string, std::string>({{"llama", ""},
                                                                   {"mistral", ""},
                                                                   {"qwen2", "window"},
                                                                   {"gpt2", "layer_scale"},
                                                                   {"gpt_neox", ""},
                                                                   {"opt", "post_ln"}}));
  INFO(arch << " " << variant);
  auto m = pc::Model::Load(pc::test::MakeReferenceModel(arch, variant.empty() ? "" : "--variant " + variant));
  const int64_t B = 3, T = 23;
  at::NoGradGuard no_grad;
  const at::Tensor tokens = pc::test::RandomTokens(B, T, m->config().vocab_size, 5);
  const at::Tensor whole = m->Forward(tokens);
  const at::Tensor whole_cached = CachedLogits(*m, tokens, 9);
  CHECK(MaxAbsDiff(whole_cached, whole) < kMaxAbsLogitDiff);
  // One query row of scores: B × heads × T keys float32.
  const int64_t row = B * m->config().heads * T * static_cast<int64_t>(sizeof(float));
  for (int64_t rows : {int64_t{5}, int64_t{1}}) {
    INFO(rows << " queries per chunk");
    ChunkBytes chunked(rows * row);
    at::Tensor logits = m->Forward(tokens);
    CHECK(MaxAbsDiff(logits, whole) < kMaxAbsLogitDiff);
    CHECK(MaxAbsDiff(CachedLogits(*m, tokens, 9), whole) < kMaxAbsLogitDiff);
  }
}
