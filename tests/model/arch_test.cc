// The architecture table, enumerated: every table in model/arch.cc gets these checks without the
// test naming it, so a new architecture is covered by adding its table.
#include <catch2/catch.hpp>

#include <ATen/ATen.h>

#include <cmath>
#include <set>

#include "core/error.h"
#include "core/fs.h"
#include "core/tensor_util.h"
#include "core/json_util.h"
#include "model/model.h"
#include "model/rope.h"
#include "model/sizes.h"
#include "tests/model/model_test_util.h"
#include "tests/test_support.h"

namespace {

// A small config of `a` (grouped-query attention where the table has a key for it, partial rotary
// where it has a rotary key), through the table's own config.json writer.
nlohmann::json SmallConfigJson(const pc::ArchSpec& a) {
  pc::ModelConfig c;
  c.arch = &a;
  c.model_type = a.model_type;
  c.vocab_size = 96;
  c.hidden = 32;
  c.layers = 2;
  c.heads = 4;
  c.kv_heads = *a.keys.kv_heads ? 2 : 4;
  c.head_dim = 8;
  c.intermediate = 48;
  c.max_pos = 64;
  c.embed_dim = c.hidden;
  c.norm_eps = 1e-5;
  c.act = pc::ParseAct(a.defaults.act, a.model_type);
  c.tie_embeddings = false;
  c.rotary_dim = *a.keys.rotary_pct ? 4 : c.head_dim;
  c.parallel_residual = a.defaults.parallel_residual;
  return pc::ConfigJsonFor(c);
}

// Seeded random tensors for every name the table gives, in the checkpoint layout.
std::map<std::string, at::Tensor> RandomTensors(const pc::ModelConfig& c, uint64_t seed) {
  const pc::ArchSpec& a = *c.arch;
  at::Generator gen = at::detail::createCPUGenerator(seed);
  auto normal = [&](std::vector<int64_t> shape, double s) { return at::randn(shape, gen) * s; };
  const bool ln = a.norm == pc::NormKind::kLayerNorm;
  std::map<std::string, at::Tensor> t;
  t[pc::WeightOf(a.embed.hf)] = normal({c.vocab_size, c.embed_dim}, 1.0);
  t[pc::WeightOf(a.lm_head.hf)] = normal({c.vocab_size, c.hidden}, 0.2);
  if (a.pos == pc::PosKind::kLearned) t[pc::WeightOf(a.pos_embed.hf)] = normal({c.max_pos + a.pos_offset, c.hidden}, 0.5);
  auto norm = [&](const std::string& name, int64_t width) {
    t[pc::WeightOf(name)] = 1 + normal({width}, 0.1);
    if (ln) t[pc::BiasOf(name)] = normal({width}, 0.1);
  };
  norm(a.final_norm.hf, c.hidden);
  for (int l = 0; l < c.layers; ++l) {
    norm(pc::ExpandName(a.attn_norm.hf, l), c.hidden);
    norm(pc::ExpandName(a.mlp_norm.hf, l), c.hidden);
    if (a.qk_norm) {
      t[pc::WeightOf(pc::ExpandName(a.q_norm.hf, l))] = 1 + normal({c.head_dim}, 0.1);
      t[pc::WeightOf(pc::ExpandName(a.k_norm.hf, l))] = 1 + normal({c.head_dim}, 0.1);
    }
    for (const pc::LinearSpec& s : a.linears) {
      const pc::LinearDims dims = pc::BlockLinearDims(c, s.role);
      at::Tensor w = normal({dims.out, dims.in}, 0.3);
      const std::string name = pc::ExpandName(s.name.hf, l);
      t[pc::WeightOf(name)] = a.conv1d ? w.t().contiguous() : w;
      if (s.bias != pc::BiasRule::kNone) t[pc::BiasOf(name)] = normal({dims.out}, 0.05);
    }
  }
  return t;
}

}  // namespace

TEST_CASE("architecture table: every table loads, runs, saves and names its modules", "[model][arch]") {
  REQUIRE(pc::AllArchSpecs().size() >= 7);
  std::set<std::string> types;
  for (const pc::ArchSpec& a : pc::AllArchSpecs()) {
    DYNAMIC_SECTION(a.model_type) {
      CHECK(types.insert(a.model_type).second);
      CHECK(&pc::ArchSpecFor(a.model_type) == &a);
      // config.json written from the table reads back to the same hyper-parameters.
      const nlohmann::json j = SmallConfigJson(a);
      INFO(j.dump());
      pc::ModelConfig c = pc::ParseModelConfig(j, "table config");
      CHECK(c.arch == &a);
      CHECK(c.kv_heads == (*a.keys.kv_heads ? 2 : 4));
      CHECK(c.rotary_dim == (a.pos == pc::PosKind::kRope && *a.keys.rotary_pct ? 4 : c.head_dim));
      CHECK(pc::ConfigJsonFor(c) == j);

      // Every tensor the table names is used (none left over), the forward is finite, and a saved
      // folder holds exactly those tensors and reloads to the same logits.
      auto tensors = RandomTensors(c, 5);
      auto model = pc::Model::FromTensors(c, tensors);
      std::set<std::string> names;
      model->ForEachTensor([&](const std::string& n, const at::Tensor&, pc::StDType) { names.insert(n); });
      std::set<std::string> given;
      for (const auto& [n, t] : tensors) given.insert(n);
      CHECK(names == given);
      at::Tensor tokens = pc::test::RandomTokens(2, 12, c.vocab_size, 3);
      at::Tensor logits = model->Forward(tokens);
      CHECK(at::isfinite(logits).all().item<bool>());
      const std::string dir = pc::test::TempDir("arch-table") + "/m";
      model->Save(dir);
      auto again = pc::Model::Load(dir);
      CHECK(again->Forward(tokens).equal(logits));
      CHECK(pc::ParseModelConfig(pc::LoadJsonFile(dir + "/config.json"), dir).arch == &a);

      // KV-cache decoding equals the full forward.
      pc::KvCache cache = model->MakeCache(1, 12);
      std::vector<at::Tensor> parts;
      pc::ForwardContext c0 = model->MakeContext(4, 0, nullptr, &cache);
      parts.push_back(model->Forward(tokens.narrow(0, 0, 1).narrow(1, 0, 4), c0));
      for (int64_t i = 4; i < 12; ++i) {
        pc::ForwardContext ci = model->MakeContext(1, 0, nullptr, &cache);
        parts.push_back(model->Forward(tokens.narrow(0, 0, 1).narrow(1, i, 1), ci));
      }
      CHECK(pc::MaxRelDiff(at::cat(parts, 1), logits.narrow(0, 0, 1)) < 1e-5);

      // Module names: the Hugging Face ones cover every saved tensor; GGUF names are unique, one per
      // module, and general.architecture leads back to a table of the same layout.
      const auto modules = pc::ModuleNames(a, c.layers);
      std::set<std::string> hf, gguf;
      for (const auto& m : modules) {
        CHECK(hf.insert(m.hf).second);
        if (*a.gguf_arch) CHECK(gguf.insert(m.gguf).second);
        if (!*a.gguf_arch) CHECK(m.gguf.empty());
      }
      for (const std::string& n : names) {
        const std::string module = n.substr(0, n.rfind('.'));
        INFO(n);
        CHECK((hf.count(module) || (*a.act_scales && n.find(".act.") != std::string::npos)));
      }
      if (*a.gguf_arch) {
        const pc::ArchSpec* g = pc::ArchSpecForGguf(a.gguf_arch);
        REQUIRE(g != nullptr);
        CHECK(g->qkv == a.qkv);
        CHECK(g->norm == a.norm);
        CHECK(g->gguf_rows == a.gguf_rows);
      }
    }
  }
  CHECK(pc::ArchSpecForGguf("bloom") == nullptr);
}

TEST_CASE("transformers parity: every architecture in the table", "[model][parity][refenv][arch]") {
  PC_SKIP_IF(pc::test::RefenvPython().empty(), "the reference environment (PERPCOMP_REFENV) is absent");
  std::vector<pc::test::TransformersJob> jobs;
  for (const pc::ArchSpec& a : pc::AllArchSpecs()) {
    pc::test::TransformersJob j;
    j.name = a.model_type;
    j.config = SmallConfigJson(a);
    j.config.erase("architectures");
    jobs.push_back(j);
  }
  pc::test::RunTransformersJobs(jobs);
  for (const auto& j : jobs) {
    INFO(j.name << " (" << j.dir << ")");
    auto model = pc::Model::Load(j.dir);
    CHECK(model->arch().model_type == j.name);
    at::Tensor ours = model->Forward(j.tokens);
    REQUIRE(ours.sizes() == j.logits.sizes());
    const double rel = pc::MaxRelDiff(ours, j.logits);
    INFO("max |logit difference| / max |logit| " << rel);
    CHECK(rel < 1e-4);
  }
}

namespace {
nlohmann::json LlamaJson() {
  return {{"model_type", "llama"},        {"vocab_size", 32},         {"hidden_size", 16},
          {"num_hidden_layers", 1},       {"num_attention_heads", 2}, {"intermediate_size", 32},
          {"max_position_embeddings", 64}};
}
std::string ParseError(const nlohmann::json& j) {
  try {
    pc::ParseModelConfig(j, "cfg.json");
  } catch (const pc::Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("config.json: rope_scaling and rope_parameters read as transformers reads them", "[model][arch]") {
  using Catch::Matchers::Contains;
  nlohmann::json j = LlamaJson();
  j["rope_scaling"] = {{"type", "linear"}, {"factor", 2}};  // the legacy `type` key
  pc::ModelConfig c = pc::ParseModelConfig(j, "cfg.json");
  CHECK(c.rope.type == pc::RopeType::kLinear);
  CHECK(c.rope.factor == 2.0);

  // rope_scaling wins over rope_parameters; the object's rope_theta over the top-level key.
  j = LlamaJson();
  j["rope_theta"] = 10000.0;
  j["rope_parameters"] = {{"rope_type", "dynamic"}, {"factor", 3.0}, {"rope_theta", 500000.0}};
  c = pc::ParseModelConfig(j, "cfg.json");
  CHECK(c.rope.type == pc::RopeType::kDynamic);
  CHECK(c.rope_theta == 500000.0);
  j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 4.0}};
  c = pc::ParseModelConfig(j, "cfg.json");
  CHECK(c.rope.type == pc::RopeType::kLinear);
  CHECK(c.rope_theta == 10000.0);

  // yarn: attention factor from the factor (0.1 ln s + 1), original context from max_position_embeddings.
  j = LlamaJson();
  j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  c = pc::ParseModelConfig(j, "cfg.json");
  CHECK(c.rope.original_max_pos == 64);
  CHECK(c.rope.attention_factor == Approx(0.1 * std::log(4.0) + 1.0));
  CHECK(c.rope.beta_fast == 32.0);
  // A top-level original_max_position_embeddings wins over the object's (transformers' standardize_rope_params).
  j["rope_scaling"]["original_max_position_embeddings"] = 16;
  CHECK(pc::ParseModelConfig(j, "cfg.json").rope.original_max_pos == 16);
  j["original_max_position_embeddings"] = 32;
  c = pc::ParseModelConfig(j, "cfg.json");
  CHECK(c.rope.original_max_pos == 32);
  // Written back with the table's keys, it reads the same.
  pc::ModelConfig again = pc::ParseModelConfig(pc::ConfigJsonFor(c), "again");
  CHECK(again.rope.type == c.rope.type);
  CHECK(again.rope.factor == c.rope.factor);
  CHECK(again.rope.original_max_pos == c.rope.original_max_pos);
  CHECK(again.rope.attention_factor == c.rope.attention_factor);

  // Errors name the file, the type and the key.
  j = LlamaJson();
  j["rope_scaling"] = {{"rope_type", "longrope"}, {"factor", 2.0}};
  CHECK_THAT(ParseError(j), Contains("cfg.json") && Contains("'longrope' is not supported") && Contains("yarn"));
  j["rope_scaling"] = {{"rope_type", "linear"}};
  CHECK_THAT(ParseError(j), Contains("cfg.json") && Contains("(linear) needs 'factor'"));
  j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0}};
  CHECK_THAT(ParseError(j), Contains("needs 'high_freq_factor'"));
  j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", "2"}};
  CHECK_THAT(ParseError(j), Contains("'factor' is \"2\", expected a number"));
  j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 2.0}, {"partial_rotary_factor", 0.5}};
  CHECK_THAT(ParseError(j), Contains("partial_rotary_factor 0.5") && Contains("not supported"));
  j["rope_scaling"] = "linear";
  CHECK_THAT(ParseError(j), Contains("'rope_scaling' is \"linear\", expected an object"));
  // Architectures without RoPE do not read it.
  nlohmann::json g = SmallConfigJson(pc::ArchSpecFor("gpt2"));
  g["rope_scaling"] = {{"rope_type", "longrope"}};
  CHECK(pc::ParseModelConfig(g, "gpt2").rope.type == pc::RopeType::kDefault);
}

TEST_CASE("rope: dynamic NTK frequencies depend on the length only beyond max_position_embeddings", "[model][arch]") {
  nlohmann::json j = LlamaJson();
  j["rope_scaling"] = {{"rope_type", "dynamic"}, {"factor", 2.0}};
  pc::ModelConfig c = pc::ParseModelConfig(j, "cfg.json");
  j.erase("rope_scaling");
  const pc::RopeFrequencies plain = pc::ComputeRope(pc::ParseModelConfig(j, "cfg.json"), 64);
  CHECK(pc::RopeDependsOnLength(c));
  CHECK(pc::ComputeRope(c, 10).inv_freq == plain.inv_freq);
  CHECK(pc::ComputeRope(c, 64).inv_freq == plain.inv_freq);
  // Beyond: base × (2·128/64 − 1)^(d/(d−2)) = base × 3^(8/6) with d = 8 rotary dims.
  const pc::RopeFrequencies longer = pc::ComputeRope(c, 128);
  const double base = 10000.0 * std::pow(3.0, 8.0 / 6.0);
  CHECK(longer.inv_freq[1] == Approx(1.0 / std::pow(base, 2.0 / 8.0)).epsilon(1e-12));
  CHECK(longer.inv_freq[0] == 1.0);
}
