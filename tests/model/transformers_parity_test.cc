// Forward parity with Hugging Face transformers' own modeling code (the reference environment):
// models that transformers builds from a config and saves with save_pretrained in float32, loaded
// by perpcomp, logits compared on random token windows.
#include <catch2/catch.hpp>

#include <ATen/ATen.h>

#include "core/tensor_util.h"
#include "model/model.h"
#include "model/rope.h"
#include "tests/model/model_test_util.h"
#include "tests/test_support.h"

namespace {
// Budgets: the largest logit difference relative to the largest |logit|, and the mean next-token NLL.
constexpr double kMaxRelLogitDiff = 1e-4;
constexpr double kMaxRelNllDiff = 1e-5;

// Mean NLL of tokens[:, 1:] under logits[:, :-1] (float64).
double MeanNll(const at::Tensor& logits, const at::Tensor& tokens) {
  const int64_t T = tokens.size(1);
  at::Tensor lp = at::log_softmax(logits.narrow(1, 0, T - 1).to(at::kDouble), -1);
  at::Tensor target = tokens.narrow(1, 1, T - 1).unsqueeze(-1);
  return -lp.gather(-1, target).mean().item<double>();
}

void CheckJobs(std::vector<pc::test::TransformersJob>& jobs) {
  pc::test::RunTransformersJobs(jobs);
  for (const auto& j : jobs) {
    INFO(j.name << " (" << j.dir << ")");
    auto model = pc::Model::Load(j.dir);
    at::Tensor ours = model->Forward(j.tokens);
    REQUIRE(ours.sizes() == j.logits.sizes());
    const double rel = pc::MaxRelDiff(ours, j.logits);
    const double nll = MeanNll(j.logits, j.tokens), our_nll = MeanNll(ours, j.tokens);
    INFO("max |logit difference| / max |logit| " << rel << "; mean NLL " << our_nll << " vs transformers " << nll);
    CHECK(rel < kMaxRelLogitDiff);
    CHECK(std::abs(our_nll - nll) / nll < kMaxRelNllDiff);
    // Not a trivial model: the logits are far from uniform.
    CHECK((at::amax(j.logits, -1) - at::amin(j.logits, -1)).mean().item<float>() > 3.0f);
  }
}

nlohmann::json Qwen3Config() {
  // head_dim 16 differs from hidden / heads = 12.
  return {{"model_type", "qwen3"},       {"vocab_size", 96},          {"hidden_size", 48},
          {"num_hidden_layers", 2},      {"num_attention_heads", 4},  {"num_key_value_heads", 2},
          {"head_dim", 16},              {"intermediate_size", 80},   {"max_position_embeddings", 64},
          {"tie_word_embeddings", false}};
}

// A Llama whose context (max_position_embeddings 16) the test windows (40 tokens) exceed.
nlohmann::json ShortLlama(const nlohmann::json& rope) {
  nlohmann::json c = {{"model_type", "llama"},     {"vocab_size", 96},         {"hidden_size", 64},
                      {"num_hidden_layers", 2},    {"num_attention_heads", 4}, {"num_key_value_heads", 2},
                      {"intermediate_size", 96},   {"max_position_embeddings", 16}};
  c["rope_parameters"] = rope;
  return c;
}
}  // namespace

TEST_CASE("transformers parity: qwen3 (per-head q/k RMSNorm, head_dim of its own)", "[model][parity][refenv]") {
  PC_SKIP_IF(pc::test::RefenvPython().empty(), "the reference environment (PERPCOMP_REFENV) is absent");
  std::vector<pc::test::TransformersJob> jobs(3);
  jobs[0].name = "qwen3";
  jobs[0].config = Qwen3Config();
  jobs[1].name = "qwen3 tied, sliding window on layer 1";
  jobs[1].config = Qwen3Config();
  jobs[1].config["tie_word_embeddings"] = true;
  jobs[1].config["use_sliding_window"] = true;
  jobs[1].config["sliding_window"] = 5;
  jobs[1].config["max_window_layers"] = 1;
  jobs[2].name = "qwen3 attention_bias";
  jobs[2].config = Qwen3Config();
  jobs[2].config["attention_bias"] = true;
  CheckJobs(jobs);
  // The table's forward flag is what the loader used.
  auto model = pc::Model::Load(jobs[0].dir);
  CHECK(model->arch().qk_norm);
  CHECK(model->block(0).q_norm.weight.sizes() == at::IntArrayRef({16}));
  CHECK(model->config().head_dim == 16);
}

TEST_CASE("transformers parity: rope_scaling types beyond the original context", "[model][parity][refenv]") {
  PC_SKIP_IF(pc::test::RefenvPython().empty(), "the reference environment (PERPCOMP_REFENV) is absent");
  auto job = [](const std::string& name, nlohmann::json config, int64_t length = 40, bool legacy = false) {
    pc::test::TransformersJob j;
    j.name = name;
    j.config = std::move(config);
    j.length = length;
    j.legacy_rope = legacy;
    return j;
  };
  const nlohmann::json llama3 = {{"rope_type", "llama3"}, {"rope_theta", 10000.0}, {"factor", 8.0},
                                 {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
                                 {"original_max_position_embeddings", 16}};
  nlohmann::json yarn = ShortLlama({{"rope_type", "yarn"}, {"rope_theta", 10000.0}, {"factor", 4.0},
                                    {"original_max_position_embeddings", 16}});
  yarn["max_position_embeddings"] = 64;
  yarn["head_dim"] = 24;  // differs from hidden / heads
  nlohmann::json yarn_params = ShortLlama({{"rope_type", "yarn"}, {"rope_theta", 10000.0}, {"factor", 4.0},
                                           {"original_max_position_embeddings", 16}, {"beta_fast", 8.0},
                                           {"beta_slow", 2.0}, {"mscale", 1.0}, {"mscale_all_dim", 0.5},
                                           {"truncate", false}});
  nlohmann::json neox = {{"model_type", "gpt_neox"},  {"vocab_size", 96},           {"hidden_size", 64},
                         {"num_hidden_layers", 2},    {"num_attention_heads", 4},   {"intermediate_size", 96},
                         {"max_position_embeddings", 16}};
  neox["rope_parameters"] = {{"rope_type", "dynamic"}, {"rope_theta", 10000.0}, {"factor", 2.0},
                             {"partial_rotary_factor", 0.5}};
  nlohmann::json qwen2 = ShortLlama({{"rope_type", "yarn"}, {"rope_theta", 1000000.0}, {"factor", 4.0},
                                     {"original_max_position_embeddings", 16}});
  qwen2["model_type"] = "qwen2";
  std::vector<pc::test::TransformersJob> jobs = {
      job("linear", ShortLlama({{"rope_type", "linear"}, {"rope_theta", 10000.0}, {"factor", 4.0}})),
      job("dynamic beyond max_position_embeddings",
          ShortLlama({{"rope_type", "dynamic"}, {"rope_theta", 10000.0}, {"factor", 2.0}})),
      job("dynamic within max_position_embeddings",
          ShortLlama({{"rope_type", "dynamic"}, {"rope_theta", 10000.0}, {"factor", 2.0}}), 12),
      job("yarn, head_dim 24", yarn, 48),
      job("yarn with beta_fast, beta_slow, mscale, mscale_all_dim, truncate", yarn_params),
      job("llama3", ShortLlama(llama3)),
      job("llama3, transformers 4 form (rope_scaling, type, top-level rope_theta)", ShortLlama(llama3), 40, true),
      job("linear, transformers 4 form",
          ShortLlama({{"rope_type", "linear"}, {"rope_theta", 50000.0}, {"factor", 2.0}}), 40, true),
      job("gpt_neox dynamic, partial_rotary_factor 0.5", neox),
      job("qwen2 yarn (Qwen2.5 style)", qwen2),
  };
  CheckJobs(jobs);
  // The configs were read as the scaled types they are (not silently as default RoPE).
  const pc::RopeType want[] = {pc::RopeType::kLinear, pc::RopeType::kDynamic, pc::RopeType::kDynamic,
                               pc::RopeType::kYarn,   pc::RopeType::kYarn,    pc::RopeType::kLlama3,
                               pc::RopeType::kLlama3, pc::RopeType::kLinear,  pc::RopeType::kDynamic,
                               pc::RopeType::kYarn};
  for (size_t i = 0; i < jobs.size(); ++i) {
    INFO(jobs[i].name);
    CHECK(pc::LoadModelConfig(jobs[i].dir).rope.type == want[i]);
  }
  CHECK(pc::LoadModelConfig(jobs[8].dir).rotary_dim == 8);
}
