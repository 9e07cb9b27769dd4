// AWQ through the engine: α = 0 equals RTN, folding preserves the function on every
// architecture, the groups and records, parameter errors.
#include <catch2/catch.hpp>

#include <ATen/ATen.h>

#include "compress/awq_groups.h"
#include "compress/engine.h"
#include "compress/quantizer.h"
#include "core/error.h"
#include "core/tensor_util.h"
#include "tests/compress/awq_test_util.h"
#include "tests/model/model_test_util.h"
#include "tests/test_support.h"

using Catch::Matchers::Contains;
using pc::ParamScalar;

namespace {

std::map<std::string, ParamScalar> P(std::map<std::string, ParamScalar> extra) {
  std::map<std::string, ParamScalar> p = {{"bits", int64_t{4}}, {"group_size", int64_t{16}}};
  for (auto& [k, v] : extra) p[k] = v;
  return p;
}

// Every block tensor of `a` and `b` (both with all blocks loaded).
std::map<std::string, at::Tensor> Tensors(pc::Model& m) {
  std::map<std::string, at::Tensor> out;
  m.ForEachTensor([&](const std::string& n, const at::Tensor& t, pc::StDType) { out[n] = t; });
  return out;
}

const pc::Record* Group(const pc::CompressResult& r, const std::string& kind, int layer) {
  for (const auto* rec : pc::test::RecordsOf(r, "awq_group")) {
    if (rec->text.at("kind") == kind && rec->values.at("layer") == layer) return rec;
  }
  return nullptr;
}

// Every "linear" record's err_after is at rounding level (for runs that compress nothing).
void CheckNoLoggedError(const pc::CompressResult& r) {
  int n = 0;
  for (const auto* lin : pc::test::RecordsOf(r, "linear")) {
    INFO(lin->name << " err_after " << lin->values.at("err_after"));
    CHECK(lin->values.at("err_after") < 1e-5);
    ++n;
  }
  CHECK(n > 0);
}

}  // namespace

TEST_CASE("awq: alpha 0 without clipping equals RTN exactly through the engine", "[compress][awq]") {
  PC_SKIP_IF(!pc::test::HavePythonTorch(), "/usr/bin/python3 with torch is absent");
  for (const std::string arch : {"llama", "gpt_neox"}) {
    INFO(arch);
    std::string dir = pc::test::MakeReferenceModel(arch);
    auto model = pc::test::LoadDetached(dir);
    auto original = pc::test::LoadDetached(dir);
    pc::Plan plan = pc::test::MethodPlan(*model, "awq", P({{"n_grid", int64_t{1}}, {"clip", false}}));
    pc::CompressResult r = pc::test::Compress(*model, plan);
    auto before = Tensors(*original), after = Tensors(*model);
    for (int l = 0; l < model->num_layers(); ++l) {
      for (const pc::Linear& lin : original->block(l).linears) {
        INFO(lin.name);
        at::Tensor w_awq = model->block(l).linears[model->block(l).index_of[int(lin.role)]].weight;
        CHECK(w_awq.equal(pc::FakeQuantize(lin.weight, {4, 16, true})));
      }
    }
    for (const auto& [name, t] : after) {
      INFO(name);
      if (before.count(name)) {
        if (name.find("weight") == std::string::npos || name.find("norm") != std::string::npos ||
            name.find("embed") != std::string::npos) {
          CHECK(t.equal(before.at(name)));  // norms, biases, embeddings untouched
        }
      } else {
        CHECK(name.find("act.scales") != std::string::npos);  // GPT-NeoX: AutoAWQ's scaled activation of ones
        CHECK(t.equal(at::ones_like(t)));
      }
    }
    for (const auto* g : pc::test::RecordsOf(r, "awq_group")) {
      if (g->text.at("status") == "scaled") CHECK(g->values.at("alpha") == 0.0);
    }
  }
}

TEST_CASE("awq: folding the scales without quantizing leaves the logits unchanged", "[compress][awq]") {
  PC_SKIP_IF(!pc::test::HavePythonTorch(), "/usr/bin/python3 with torch is absent");
  struct Case {
    std::string arch, variant;
    int expected_scaled;  // scaled groups per layer
  };
  const std::vector<Case> cases = {
      {"llama", "", 3},        // GQA: v -> o skipped
      {"gpt2", "", 4},         // ln_1 -> c_attn, c_attn v rows -> c_proj, ln_2 -> c_fc, act -> c_proj
      {"gpt_neox", "", 3},     // parallel residual
      {"gpt_neox", "sequential", 3},
      {"opt", "", 4},
      {"opt", "post_ln", 2},   // post-LN: the two norm groups are skipped
  };
  for (const Case& c : cases) {
    for (const auto& extra : std::vector<std::map<std::string, ParamScalar>>{
             {{"alpha", 0.5}}, {{"alpha", 0.8}, {"duo_scaling", true}}, {}}) {
      INFO(c.arch << " " << c.variant << " params " << extra.size());
      std::string dir = pc::test::MakeReferenceModel(c.arch, c.variant.empty() ? "" : "--variant " + c.variant);
      auto model = pc::test::LoadDetached(dir);
      at::Tensor tokens = pc::test::RandomTokens(3, 20, model->config().vocab_size, 11);
      at::Tensor ref = model->Forward(tokens);
      auto p = P(extra);
      p["quantize"] = false;
      p["clip"] = false;
      pc::Plan plan = pc::test::MethodPlan(*model, "awq", p);
      pc::CompressResult r = pc::test::Compress(*model, plan);
      at::Tensor out = model->Forward(tokens);
      const double rel = pc::MaxRelDiff(out, ref);
      INFO("max relative logit difference " << rel);
      CHECK(rel < 1e-5);
      int scaled = 0;
      double s_spread = 0;
      for (const auto* g : pc::test::RecordsOf(r, "awq_group")) {
        if (g->text.at("status") != "scaled") continue;
        ++scaled;
        s_spread = std::max(s_spread, g->values.at("scale_max") / g->values.at("scale_min"));
      }
      CHECK(scaled == c.expected_scaled * model->num_layers());
      if (!extra.empty()) CHECK(s_spread > 2.0);  // the scales were not trivial
      // Nothing was compressed, so every linear's logged error is ~0, including the linears whose
      // output rows absorbed 1/s (up_proj, v_proj, fc1, c_attn): the engine compares their outputs
      // with the original outputs times the method's OutputScale.
      CheckNoLoggedError(r);
    }
  }
}

TEST_CASE("awq: v -> o is scaled under multi-head attention and folding keeps the function", "[compress][awq]") {
  auto model = pc::test::RandomLlama(32, 4, 4, 48, 2);
  at::Tensor tokens = pc::test::RandomTokens(2, 16, model->config().vocab_size, 3);
  at::Tensor ref = model->Forward(tokens);
  pc::Plan plan = pc::test::MethodPlan(*model, "awq", P({{"quantize", false}, {"clip", false}}));
  pc::CompressResult r = pc::test::Compress(*model, plan);
  CHECK(pc::MaxRelDiff(model->Forward(tokens), ref) < 1e-5);
  const pc::Record* vo = Group(r, "v->o", 1);
  REQUIRE(vo != nullptr);
  CHECK(vo->text.at("status") == "scaled");
  CHECK(vo->text.at("inspect") == "members");
  CHECK(vo->name == "model.layers.1.self_attn.v_proj -> o_proj");
  // v_proj's and up_proj's outputs were divided by s on purpose: not a compression error.
  CheckNoLoggedError(r);
}

TEST_CASE("awq: GQA and post-LN groups are skipped with their reason", "[compress][awq]") {
  auto gqa = pc::test::RandomLlama(32, 4, 2, 48, 1);
  pc::Plan plan = pc::test::MethodPlan(*gqa, "awq", P({{"n_grid", int64_t{2}}}));
  pc::CompressResult r = pc::test::Compress(*gqa, plan);
  const pc::Record* vo = Group(r, "v->o", 0);
  REQUIRE(vo != nullptr);
  CHECK(vo->text.at("status") == "skipped");
  CHECK_THAT(vo->text.at("skip_reason"), Contains("v_proj [16, 32] and o_proj [32, 32] differ in shape"));
  // A group with a member outside the method instance is not scaled.
  auto m2 = pc::test::RandomLlama(32, 4, 2, 48, 1);
  pc::Plan p2 = pc::test::MethodPlan(*m2, "awq", P({}), {"model.layers.0.self_attn.k_proj"});
  pc::CompressResult r2 = pc::test::Compress(*m2, p2);
  const pc::Record* qkv = Group(r2, "attn_norm->q,k,v", 0);
  REQUIRE(qkv != nullptr);
  CHECK(qkv->text.at("status") == "skipped");
  CHECK_THAT(qkv->text.at("skip_reason"), Contains("k_proj not compressed by this awq instance"));
}

TEST_CASE("awq: the search keeps the alpha of the smallest loss and records the curves", "[compress][awq]") {
  for (const std::string method : {"awq", "perp-awq"}) {
    auto model = pc::test::RandomLlama(32, 4, 4, 48, 2, 9);
    pc::Plan plan = pc::test::MethodPlan(*model, method, P({}));
    pc::CompressResult r = pc::test::Compress(*model, plan);
    auto groups = pc::test::RecordsOf(r, "awq_group");
    REQUIRE(groups.size() == 8);
    for (const auto* g : groups) {
      INFO(method << " " << g->name);
      REQUIRE(g->text.at("status") == "scaled");
      const auto& obj = g->arrays.at("objective");
      REQUIRE(obj.size() == 20);
      REQUIRE(g->arrays.at("alpha").size() == 20);
      CHECK(g->arrays.at("alpha")[19] == Approx(0.95));
      size_t best = std::min_element(obj.begin(), obj.end()) - obj.begin();
      CHECK(g->values.at("alpha") == g->arrays.at("alpha")[best]);
      CHECK(g->values.at("objective") <= g->values.at("objective_alpha0"));
      for (size_t i = 0; i < obj.size(); ++i) {
        const double par = g->arrays.at("par")[i], perp = g->arrays.at("perp")[i], iso = g->arrays.at("iso")[i];
        CHECK(par + perp == Approx(iso).epsilon(1e-4));
        if (method == "awq") CHECK(obj[i] == iso);
        if (method == "perp-awq") CHECK(obj[i] == Approx(0.1 * par + perp).epsilon(1e-12));
      }
      CHECK(g->text.at("method") == method);
    }
    // Clipping: every linear but q and k; its record carries the chosen factors.
    for (const auto* lin : pc::test::RecordsOf(r, "linear")) {
      INFO(lin->name);
      const bool qk = lin->text.at("role") == "q" || lin->text.at("role") == "k";
      CHECK(lin->values.count("clip_mean") == (qk ? 0u : 1u));
      if (!qk) {
        CHECK(lin->values.at("clip_mean") <= 1.0);
        CHECK(lin->values.at("clip_mean") >= 0.55);
        CHECK(lin->arrays.at("clip_hist").size() == 10);
      }
      CHECK(lin->values.count("alpha") == 1u);
      CHECK(lin->values.at("err_after") > 0);
    }
  }
}

TEST_CASE("awq: clipping skips a fused qkv unless clip_fused_v, then only its v rows", "[compress][awq]") {
  PC_SKIP_IF(!pc::test::HavePythonTorch(), "/usr/bin/python3 with torch is absent");
  std::string dir = pc::test::MakeReferenceModel("gpt_neox");
  for (bool fused_v : {false, true}) {
    auto model = pc::test::LoadDetached(dir);
    auto original = pc::test::LoadDetached(dir);
    // No quantization and α = 0: only clipping changes the weights.
    pc::Plan plan = pc::test::MethodPlan(*model, "awq", P({{"alpha", 0.0}, {"quantize", false},
                                                            {"clip_fused_v", fused_v}, {"bits", int64_t{2}}}));
    pc::test::Compress(*model, plan);
    at::Tensor w0 = original->block(0).Get(pc::Role::kQKV).weight, w1 = model->block(0).Get(pc::Role::kQKV).weight;
    at::Tensor rows = pc::awq::FusedValueRows(*model);
    at::Tensor changed = (w0 != w1).any(1);  // (3d,) rows touched
    if (!fused_v) {
      CHECK(changed.sum().item<int64_t>() == 0);
    } else {
      CHECK(changed.index_select(0, rows).sum().item<int64_t>() > 0);
      CHECK(changed.sum().item<int64_t>() == changed.index_select(0, rows).sum().item<int64_t>());
    }
  }
}

TEST_CASE("awq grid llm-compressor: s = 1 first, then the duo form at i/18 up to 1, in the records", "[compress][awq]") {
  auto model = pc::test::RandomLlama(32, 4, 4, 48, 1, 9);
  pc::Plan plan = pc::test::MethodPlan(*model, "awq", P({{"duo_scaling", true}, {"grid", std::string("llm-compressor")},
                                                         {"clip", false}}));
  pc::CompressResult r = pc::test::Compress(*model, plan);
  auto groups = pc::test::RecordsOf(r, "awq_group");
  REQUIRE(!groups.empty());
  for (const auto* g : groups) {
    INFO(g->name);
    if (g->text.at("status") != "scaled") continue;
    const auto& alpha = g->arrays.at("alpha");
    const auto& duo = g->arrays.at("duo");
    REQUIRE(alpha.size() == 20);
    REQUIRE(duo.size() == 20);
    CHECK(alpha[0] == 0.0);
    CHECK(duo[0] == 0.0);
    CHECK(alpha[1] == 0.0);
    CHECK(duo[1] == 1.0);
    CHECK(alpha[19] == 1.0);
    CHECK(g->values.at("objective") <= g->values.at("objective_alpha0"));  // s = 1 is on this grid
  }
}

TEST_CASE("awq: bad parameters are refused with the parameter's name", "[compress][awq]") {
  const pc::MethodInfo& info = pc::MethodRegistry::Builtins().Get("awq");
  auto make = [&](std::map<std::string, ParamScalar> p) {
    return info.create(pc::ResolveParams("awq", info.params, p, {}, "r.yaml:3"), "r.yaml:3");
  };
  CHECK_THROWS_WITH(make({{"bits", int64_t{9}}}), Contains("r.yaml:3: 'bits' = 9 is out of range (2..8)"));
  CHECK_THROWS_WITH(make({{"bits", int64_t{1}}}), Contains("'bits' = 1 is out of range (2..8)"));
  CHECK_THROWS_WITH(make({{"n_grid", int64_t{0}}}), Contains("'n_grid' = 0 is out of range (1..1000)"));
  CHECK_THROWS_WITH(make({{"alpha", 1.5}}), Contains("'alpha' = 1.5 is out of range (-1..1)"));
  CHECK_THROWS_WITH(make({{"alpha", -0.5}}), Contains("r.yaml:3: 'alpha' must be -1 (search) or lie in 0..1, got -0.5"));
  CHECK_THROWS_WITH(make({{"clip_steps", int64_t{21}}}), Contains("'clip_steps' = 21 is out of range (1..20)"));
  CHECK_THROWS_WITH(make({{"lambda_par", 0.0}, {"lambda_perp", 0.0}}),
                    Contains("'lambda_par' and 'lambda_perp' are both 0"));
  CHECK_THROWS_WITH(make({{"lambda_perp", -1.0}}), Contains("'lambda_perp' = -1 is out of range"));
  CHECK_THROWS_WITH(make({{"scale_dtype", std::string("bf16")}}),
                    Contains("'scale_dtype' = 'bf16' is not allowed (one of: f32, f16)"));
  CHECK_THROWS_WITH(make({{"group_size", int64_t{0}}}), Contains("'group_size' = 0 is out of range"));
  CHECK_THROWS_WITH(make({{"grid_step", int64_t{20}}}), Contains("method 'awq' has no parameter 'grid_step'"));
  CHECK_THROWS_WITH(make({{"grid", std::string("autoawq")}}),
                    Contains("'grid' = 'autoawq' is not allowed (one of: llm-awq, llm-compressor)"));
  CHECK_THROWS_WITH(make({{"grid", std::string("llm-compressor")}, {"duo_scaling", true}, {"n_grid", int64_t{2}}}),
                    Contains("r.yaml:3: grid 'llm-compressor' needs n_grid >= 3, got 2"));
  // perp-awq: the defaults of docs/AWQ.md.
  const pc::MethodInfo& perp = pc::MethodRegistry::Builtins().Get("perp-awq");
  pc::MethodParams d = pc::ResolveParams("perp-awq", perp.params, {}, {}, "x");
  CHECK(d.Double("lambda_par") == 0.1);
  CHECK(d.Double("lambda_perp") == 1.0);
  CHECK(perp.default_windowing == "awq");
  CHECK_FALSE(perp.default_propagate_compressed);
}
