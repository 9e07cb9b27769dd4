#include <catch2/catch.hpp>

#include <ATen/ATen.h>

#include "core/cpu_features.h"
#include "core/fs.h"
#include "core/tensor_util.h"
#include "model/config.h"
#include "model/llama2c.h"
#include "model/model.h"
#include "tests/model/model_test_util.h"
#include "tests/test_support.h"

using Catch::Matchers::Contains;

namespace {
// Logit agreement budget against the eager python reference (float32 both sides).
constexpr double kMaxRelLogitDiff = 1e-4;
// KV-cache decoding against the full forward.
constexpr double kMaxRelCacheDiff = 1e-5;

void CheckParity(const std::string& dir, int64_t windows = 3, int64_t length = 24, bool trivial_ok = false) {
  auto model = pc::Model::Load(dir);
  at::Tensor tokens = pc::test::RandomTokens(windows, length, model->config().vocab_size, 7);
  at::Tensor ours = model->Forward(tokens);
  at::Tensor ref = pc::test::ReferenceLogits("logits", dir, tokens);
  REQUIRE(ours.sizes() == ref.sizes());
  double rel = pc::MaxRelDiff(ours, ref);
  INFO(dir << ": max relative logit difference " << rel << ", logit range " << (ref.max() - ref.min()).item<float>());
  CHECK(rel < kMaxRelLogitDiff);
  // Non-trivial model: the logits are far from uniform (the published tiny-random-gpt2 is not).
  if (!trivial_ok) CHECK((at::amax(ref, -1) - at::amin(ref, -1)).mean().item<float>() > 3.0f);
}

double CacheVsFull(pc::Model& model, int64_t length, int64_t prefix) {
  at::Tensor tokens = pc::test::RandomTokens(1, length, model.config().vocab_size, 3);
  at::Tensor full = model.Forward(tokens);
  pc::KvCache cache = model.MakeCache(1, length);
  std::vector<at::Tensor> parts;
  pc::ForwardContext c0 = model.MakeContext(prefix, 0, nullptr, &cache);
  parts.push_back(model.Forward(tokens.narrow(1, 0, prefix), c0));
  for (int64_t i = prefix; i < length; ++i) {
    pc::ForwardContext ci = model.MakeContext(1, 0, nullptr, &cache);
    parts.push_back(model.Forward(tokens.narrow(1, i, 1), ci));
  }
  return pc::MaxRelDiff(at::cat(parts, 1), full);
}
}  // namespace

TEST_CASE("reference parity: every architecture on seeded random models", "[model][parity]") {
  PC_SKIP_IF(!pc::test::HavePythonTorch(), "/usr/bin/python3 with torch is absent");
  auto [arch, variant] = GENERATE(table<std::string, std::string>({
      {"llama", ""}, {"llama", "tied"}, {"mistral", ""}, {"qwen2", ""}, {"qwen2", "window"},
      {"gpt2", ""}, {"gpt2", "layer_scale"}, {"gpt_neox", ""}, {"gpt_neox", "sequential"},
      {"opt", ""}, {"opt", "post_ln"}}));
  DYNAMIC_SECTION(arch << " " << variant) {
    std::string dir = pc::test::MakeReferenceModel(arch, variant.empty() ? "" : "--variant " + variant);
    CheckParity(dir);
  }
}

TEST_CASE("reference parity: bf16 checkpoints computed in f32", "[model][parity]") {
  PC_SKIP_IF(!pc::test::HavePythonTorch(), "/usr/bin/python3 with torch is absent");
  std::string dir = pc::test::MakeReferenceModel("gpt_neox", "--dtype bf16");
  CheckParity(dir);
}

namespace {
// Sets the bf16 arithmetic policy for one test and restores the environment's on exit.
struct Bf16Policy {
  explicit Bf16Policy(pc::Bf16Compute p) { pc::SetBf16Compute(p); }
  ~Bf16Policy() { pc::ResetBf16Compute(); }
};
}  // namespace

TEST_CASE("bf16 weights computed in f32 equal f32 weights bit for bit, and stay bf16 in memory", "[model]") {
  PC_SKIP_IF(!pc::test::HavePythonTorch(), "/usr/bin/python3 with torch is absent");
  for (std::string arch : {"llama", "gpt2", "opt"}) {
    INFO(arch);
    const std::string dir = pc::test::MakeReferenceModel(arch, "--dtype bf16");
    pc::LoadOptions bf16;
    bf16.dtype = at::kBFloat16;
    auto f32 = pc::Model::Load(dir);  // bf16 on disk: exact in f32
    at::Tensor tokens = pc::test::RandomTokens(2, 20, f32->config().vocab_size, 5);
    at::Tensor want = f32->Forward(tokens);
    {
      Bf16Policy policy(pc::Bf16Compute::kF32);
      auto m = pc::Model::Load(dir, bf16);
      CHECK(m->dtype() == at::kBFloat16);
      CHECK(m->compute_dtype() == at::kFloat);
      CHECK(m->block(0).linears[0].weight.scalar_type() == at::kBFloat16);
      CHECK(m->embed().scalar_type() == at::kBFloat16);
      CHECK(at::equal(m->Forward(tokens), want));
      CHECK(CacheVsFull(*m, 20, 5) < kMaxRelCacheDiff);
    }
    {
      Bf16Policy policy(pc::Bf16Compute::kNative);
      auto m = pc::Model::Load(dir, bf16);
      CHECK(m->compute_dtype() == at::kBFloat16);
      at::Tensor got = m->Forward(tokens);
      CHECK(got.scalar_type() == at::kFloat);  // logits are always f32
      const double rel = pc::MaxRelDiff(got, want);
      INFO("bf16 arithmetic vs f32: max relative logit difference " << rel);
      CHECK(rel > 0);     // it really ran in bf16
      CHECK(rel < 0.25);  // and agrees to bf16 precision (8 bits of mantissa through every layer)
    }
  }
  // The default follows the CPU.
  Bf16Policy policy(pc::Bf16Compute::kAuto);
  CHECK(pc::ComputeDType(at::kBFloat16) == (pc::HostCpu().FastBf16() ? at::kBFloat16 : at::kFloat));
  CHECK(pc::ComputeDType(at::kFloat) == at::kFloat);
}

TEST_CASE("PERPCOMP_BF16_COMPUTE chooses the bf16 arithmetic and a bad value is an error naming it", "[model]") {
  pc::ResetBf16Compute();
  const char* old = std::getenv("PERPCOMP_BF16_COMPUTE");
  const std::string saved = old != nullptr ? old : "";
  setenv("PERPCOMP_BF16_COMPUTE", "f32", 1);
  CHECK(pc::ComputeDType(at::kBFloat16) == at::kFloat);
  setenv("PERPCOMP_BF16_COMPUTE", "native", 1);
  CHECK(pc::ComputeDType(at::kBFloat16) == at::kBFloat16);
  setenv("PERPCOMP_BF16_COMPUTE", "fast", 1);
  CHECK_THROWS_WITH(pc::ComputeDType(at::kBFloat16), Contains("PERPCOMP_BF16_COMPUTE='fast'") && Contains("auto, native or f32"));
  if (old != nullptr) setenv("PERPCOMP_BF16_COMPUTE", saved.c_str(), 1); else unsetenv("PERPCOMP_BF16_COMPUTE");
}

TEST_CASE("reference parity: tiny-random-gpt2 as published", "[model][parity][shared]") {
  PC_REQUIRE_SHARED();
  PC_SKIP_IF(!pc::test::HavePythonTorch(), "/usr/bin/python3 with torch is absent");
  CheckParity(pc::test::SharedPath("models/tiny-random-gpt2"), 3, 40, /*trivial_ok=*/true);
}

TEST_CASE("stories260K: converted model equals llama2.c's own math", "[model][parity][shared]") {
  PC_REQUIRE_SHARED();
  PC_SKIP_IF(!pc::test::HavePythonTorch(), "/usr/bin/python3 with torch is absent");
  std::string bin = pc::test::SharedPath("models/stories260K/stories260K.bin");
  auto model = pc::ConvertLlama2c(bin);
  at::Tensor tokens = pc::test::RandomTokens(2, 64, 512, 11);
  at::Tensor ours = model->Forward(tokens);
  at::Tensor ref = pc::test::ReferenceLogits("llama2c-logits", bin, tokens);
  double rel = pc::MaxRelDiff(ours, ref);
  INFO("max relative difference to llama2.c math " << rel);
  CHECK(rel < kMaxRelLogitDiff);
  // And the saved Hugging Face folder agrees with the HF-semantics reference.
  std::string dir = pc::test::TempDir("stories") + "/hf";
  model->Save(dir);
  CheckParity(dir, 2, 64);
}

TEST_CASE("KV cache decoding equals the full forward", "[model]") {
  PC_SKIP_IF(!pc::test::HavePythonTorch(), "/usr/bin/python3 with torch is absent");
  for (std::string arch : {"llama", "gpt2", "gpt_neox", "opt", "mistral"}) {
    auto model = pc::Model::Load(pc::test::MakeReferenceModel(arch));
    double rel = CacheVsFull(*model, 20, 5);
    INFO(arch << ": cache vs full " << rel);
    CHECK(rel < kMaxRelCacheDiff);
  }
}

namespace {
// Records every linear's input and output of the blocks, in order.
class LinearLog : public pc::ForwardHooks {
 public:
  bool Wants(pc::SiteKind k) const override {
    return k == pc::SiteKind::kLinearInput || k == pc::SiteKind::kLinearOutput;
  }
  at::Tensor At(const pc::Site& site, const at::Tensor& x, const at::Tensor&) override {
    (site.kind == pc::SiteKind::kLinearInput ? inputs : outputs).emplace_back(site.index, x.clone());
    return x;
  }
  std::vector<std::pair<int, at::Tensor>> inputs, outputs;
};
}  // namespace

TEST_CASE("stop_at_last_input: a block forward ends at the down projection's input, which equals the full pass's",
          "[model]") {
  PC_SKIP_IF(!pc::test::HavePythonTorch(), "/usr/bin/python3 with torch is absent");
  auto [arch, variant] = GENERATE(table<std::string, std::string>(
      {{"llama", ""}, {"gpt2", ""}, {"gpt_neox", ""}, {"gpt_neox", "sequential"}, {"opt", "post_ln"}}));
  DYNAMIC_SECTION(arch << " " << variant) {
    auto model = pc::Model::Load(pc::test::MakeReferenceModel(arch, variant.empty() ? "" : "--variant " + variant));
    const at::Tensor h = at::randn({2, 12, model->config().hidden}, at::TensorOptions().dtype(at::kFloat));
    const pc::Block& block = model->block(1);
    const int down = block.index_of[int(pc::Role::kDown)];
    REQUIRE(down >= 0);
    LinearLog full, stopped;
    pc::ForwardContext cf = model->MakeContext(12, 0, &full);
    CHECK(model->BlockForward(1, h, cf).defined());
    pc::ForwardContext cs = model->MakeContext(12, 0, &stopped);
    cs.stop_at_last_input = true;
    CHECK_FALSE(model->BlockForward(1, h, cs).defined());
    // Every linear saw the same input, the last of them the down projection; its output was never computed.
    REQUIRE(stopped.inputs.size() == full.inputs.size());
    CHECK(stopped.inputs.back().first == down);
    for (size_t i = 0; i < full.inputs.size(); ++i) {
      CHECK(stopped.inputs[i].first == full.inputs[i].first);
      CHECK(at::equal(stopped.inputs[i].second, full.inputs[i].second));
    }
    CHECK(stopped.outputs.size() + 1 == full.outputs.size());
    CHECK(full.outputs.back().first == down);
  }
}

TEST_CASE("save and reload give bitwise-identical logits", "[model]") {
  PC_SKIP_IF(!pc::test::HavePythonTorch(), "/usr/bin/python3 with torch is absent");
  for (std::string arch : {"gpt_neox", "opt", "llama", "gpt2"}) {
    std::string src = pc::test::MakeReferenceModel(arch);
    auto model = pc::Model::Load(src);
    std::string out = pc::test::TempDir("save") + "/m";
    pc::SaveOptions opts;
    opts.max_shard_bytes = arch == "opt" ? 40000 : pc::kDefaultMaxShardBytes;  // OPT: sharded
    model->Save(out, opts);
    if (arch == "opt") CHECK(pc::fs::Exists(out + "/model.safetensors.index.json"));
    auto again = pc::Model::Load(out);
    at::Tensor tokens = pc::test::RandomTokens(2, 16, model->config().vocab_size, 5);
    INFO(arch);
    CHECK(model->Forward(tokens).equal(again->Forward(tokens)));
    // The reference loads the saved folder too.
    CHECK(pc::MaxRelDiff(again->Forward(tokens), pc::test::ReferenceLogits("logits", out, tokens)) < kMaxRelLogitDiff);
  }
}

TEST_CASE("config.json: transformers 5's rope_parameters", "[model]") {
  nlohmann::json llama = {{"model_type", "llama"}, {"vocab_size", 97}, {"hidden_size", 48},
                          {"num_hidden_layers", 2}, {"num_attention_heads", 6}, {"num_key_value_heads", 2},
                          {"intermediate_size", 80}, {"max_position_embeddings", 128},
                          {"rope_parameters", {{"rope_type", "default"}, {"rope_theta", 500.0}}}};
  CHECK(pc::ParseModelConfig(llama, "c.json").rope_theta == 500.0);
  llama["rope_parameters"]["rope_type"] = "linear";
  CHECK_THROWS_WITH(pc::ParseModelConfig(llama, "c.json"), Contains("c.json: rope_scaling (linear) needs 'factor'"));
  llama["rope_parameters"]["factor"] = 2.0;
  CHECK(pc::ParseModelConfig(llama, "c.json").rope.factor == 2.0);
  llama["rope_parameters"]["rope_type"] = "longrope";
  CHECK_THROWS_WITH(pc::ParseModelConfig(llama, "c.json"), Contains("c.json: rope_scaling type 'longrope' is not supported"));
  nlohmann::json neox = {{"model_type", "gpt_neox"}, {"vocab_size", 97}, {"hidden_size", 48},
                         {"num_hidden_layers", 2}, {"num_attention_heads", 4}, {"intermediate_size", 192},
                         {"max_position_embeddings", 128},
                         {"rope_parameters", {{"partial_rotary_factor", 0.5}, {"rope_theta", 10000}}}};
  pc::ModelConfig c = pc::ParseModelConfig(neox, "c.json");
  CHECK(c.rotary_dim == 6);  // head_dim 12 x 0.5
  CHECK(c.rope_theta == 10000.0);
}
