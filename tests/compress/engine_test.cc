#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "compress/engine.h"
#include "compress/method.h"
#include "compress/quantizer.h"
#include "core/error.h"
#include "core/tensor_util.h"
#include "model/model.h"
#include "tests/compress/awq_test_util.h"
#include "tests/model/model_test_util.h"
#include "tests/test_support.h"

using Catch::Matchers::Contains;

namespace {
// Every linear of every block with `method` (its defaults but `given`), except linear 0 of block 1.
pc::Plan PlanOf(pc::Model& model, const std::string& method, const std::map<std::string, pc::ParamScalar>& given) {
  const pc::MethodRegistry& reg = pc::MethodRegistry::Builtins();
  const pc::MethodInfo& info = reg.Get(method);
  pc::MethodParams p = pc::ResolveParams(method, info.params, given, {}, "test");
  pc::Plan plan;
  plan.methods.push_back(info.create(p, "test"));
  plan.infos.push_back(&info);
  for (int l = 0; l < model.num_layers(); ++l) {
    for (size_t i = 0; i < model.block(l).linears.size(); ++i) {
      pc::PlanEntry e;
      e.layer = l;
      e.index = static_cast<int>(i);
      e.name = model.block(l).linears[i].name;
      e.role = model.block(l).linears[i].role;
      e.method = (l == 1 && i == 0) ? -1 : 0;
      e.skip_reason = "test skip";
      plan.entries.push_back(e);
    }
  }
  return plan;
}

pc::Plan RtnPlan(pc::Model& model, int bits, int64_t group) {
  return PlanOf(model, "rtn", {{"bits", int64_t{bits}}, {"group_size", group}});
}
}  // namespace

TEST_CASE("engine: RTN through the engine equals RTN applied directly", "[compress][engine]") {
  PC_SKIP_IF(!pc::test::HavePythonTorch(), "/usr/bin/python3 with torch is absent");
  std::string dir = pc::test::MakeReferenceModel("llama");
  auto model = pc::test::LoadDetached(dir);  // keeps the compressed blocks (no checkpoint to stream to)
  auto original = pc::Model::Load(dir);
  pc::Plan plan = RtnPlan(*model, 4, 16);
  at::Tensor calib = pc::test::RandomTokens(6, 24, model->config().vocab_size, 1);
  pc::EngineOptions eo;
  eo.micro_batch = 4;
  pc::CompressResult r = pc::RunCompression(*model, plan, calib, eo);
  for (int l = 0; l < model->num_layers(); ++l) {
    REQUIRE(model->block(l).linears.size() == 7);
    for (size_t i = 0; i < model->block(l).linears.size(); ++i) {
      at::Tensor w0 = original->block(l).linears[i].weight;
      at::Tensor w1 = model->block(l).linears[i].weight;
      if (l == 1 && i == 0) {
        CHECK(w1.equal(w0));
      } else {
        CHECK(w1.equal(pc::FakeQuantize(w0, {4, 16, true})));
      }
    }
  }
  // One record per linear, with the logged errors; the skipped one says why.
  int linear_records = 0;
  for (const auto& rec : r.records) {
    if (rec.kind != "linear") continue;
    ++linear_records;
    if (rec.text.at("method").empty()) {
      CHECK(rec.text.at("skipped") == "test skip");
    } else {
      CHECK(rec.values.at("err_after") > 0);
      CHECK(rec.values.at("err_after") == Approx(rec.values.at("err_before")).epsilon(1e-9));
    }
  }
  CHECK(linear_records == model->num_layers() * 7);
}

TEST_CASE("engine: without a method that reads statistics the blocks run on the logging windows alone",
          "[compress][engine]") {
  PC_SKIP_IF(!pc::test::HavePythonTorch(), "/usr/bin/python3 with torch is absent");
  std::string dir = pc::test::MakeReferenceModel("llama");
  at::Tensor calib = pc::test::RandomTokens(6, 24, pc::Model::Load(dir)->config().vocab_size, 3);
  pc::EngineOptions eo;
  eo.micro_batch = 4;
  eo.log_windows = 2;
  // The logged errors of RTN on 6 windows are those of RTN on the first 2: nothing else ran.
  auto logged = [&](const std::string& method, const std::map<std::string, pc::ParamScalar>& given,
                    const at::Tensor& windows, int64_t* ran) {
    auto model = pc::Model::Load(dir);
    pc::Plan plan = PlanOf(*model, method, given);
    pc::CompressResult r = pc::RunCompression(*model, plan, windows, eo);
    *ran = r.calib_windows;
    std::vector<double> errs;
    for (const auto& rec : r.records) {
      if (rec.kind == "linear" && !rec.text.at("method").empty()) errs.push_back(rec.values.at("err_after"));
    }
    return errs;
  };
  int64_t ran_all = 0, ran_two = 0;
  const std::vector<double> all = logged("rtn", {{"bits", int64_t{3}}}, calib, &ran_all);
  const std::vector<double> two = logged("rtn", {{"bits", int64_t{3}}}, calib.narrow(0, 0, 2), &ran_two);
  CHECK(ran_all == 2);
  CHECK(ran_two == 2);
  REQUIRE(all.size() == two.size());
  for (size_t k = 0; k < all.size(); ++k) CHECK(all[k] == two[k]);
  int64_t ran = 0;
  logged("magnitude", {{"sparsity", 0.5}}, calib, &ran);
  CHECK(ran == 2);
  // A method with statistics (Wanda's input norms) reads every window.
  logged("wanda", {{"sparsity", 0.5}}, calib, &ran);
  CHECK(ran == 6);
}

namespace {
// The inputs of block 0's linears (n·L, in) float64 on `windows`, by a forward of `model`.
class BlockZeroInputs : public pc::ForwardHooks {
 public:
  bool Wants(pc::SiteKind k) const override { return k == pc::SiteKind::kLinearInput; }
  at::Tensor At(const pc::Site& site, const at::Tensor& x, const at::Tensor&) override {
    if (site.layer == 0) inputs[site.index] = x.reshape({-1, x.size(-1)}).to(at::kDouble);
    return x;
  }
  std::map<int, at::Tensor> inputs;
};

// ‖x (ŵ − w)ᵀ‖² / ‖x wᵀ‖² in float64 (the reference model's linears have no bias).
double RelError(const at::Tensor& x, const at::Tensor& w_hat, const at::Tensor& w) {
  const at::Tensor w64 = w.to(at::kDouble);
  return at::mm(x, (w_hat.to(at::kDouble) - w64).t()).square().sum().item<double>() /
         at::mm(x, w64.t()).square().sum().item<double>();
}
}  // namespace

TEST_CASE("engine: the logged errors are each linear's relative output error on the logging windows",
          "[compress][engine]") {
  PC_SKIP_IF(!pc::test::HavePythonTorch(), "/usr/bin/python3 with torch is absent");
  std::string dir = pc::test::MakeReferenceModel("llama");
  auto original = pc::Model::Load(dir);
  at::Tensor calib = pc::test::RandomTokens(6, 24, original->config().vocab_size, 5);
  pc::EngineOptions eo;
  eo.micro_batch = 2;
  eo.log_windows = 3;  // the logging windows end inside the second micro-batch
  BlockZeroInputs hooks;
  original->Forward(calib.narrow(0, 0, eo.log_windows), &hooks);
  // RTN: the logging windows' own pass; GPTQ: taken in its statistics pass; true-sequential GPTQ:
  // an own pass again (its later stages see compressed inputs); GPTQ feeding the original outputs
  // forward: taken in the pass that computes them.
  struct Case {
    std::string method;
    std::map<std::string, pc::ParamScalar> given;
    bool propagate_compressed;
  };
  const std::vector<Case> cases = {
      {"rtn", {{"bits", int64_t{3}}}, true},
      {"gptq", {{"bits", int64_t{3}}, {"group_size", int64_t{16}}}, true},
      {"gptq", {{"bits", int64_t{3}}, {"group_size", int64_t{16}}, {"true_sequential", true}}, true},
      {"gptq", {{"bits", int64_t{4}}}, false},
      {"sparsegpt", {{"sparsity", 0.5}}, true},
  };
  for (const auto& [method, given, propagate_compressed] : cases) {
    auto model = pc::test::LoadDetached(dir);
    pc::Plan plan = PlanOf(*model, method, given);
    plan.propagate_compressed = propagate_compressed;
    pc::CompressResult r = pc::RunCompression(*model, plan, calib, eo);
    int checked = 0;
    for (const auto& rec : r.records) {
      if (rec.kind != "linear" || rec.text.at("method").empty() || rec.values.at("layer") != 0) continue;
      int index = -1;
      for (size_t i = 0; i < model->block(0).linears.size(); ++i) {
        if (model->block(0).linears[i].name == rec.name) index = static_cast<int>(i);
      }
      REQUIRE(index >= 0);
      const at::Tensor& x = hooks.inputs.at(index);
      const at::Tensor w = original->block(0).linears[index].weight;
      INFO(method << " " << plan.methods[0]->params().Describe() << " propagate_compressed " << propagate_compressed
                  << " " << rec.name);
      CHECK(rec.values.at("log_tokens") == x.size(0));
      CHECK(rec.values.at("err_after") ==
            Approx(RelError(x, model->block(0).linears[index].weight, w)).epsilon(1e-5));
      CHECK(rec.values.at("err_before") == Approx(RelError(x, plan.methods[0]->NaiveWeight(w), w)).epsilon(1e-5));
      ++checked;
    }
    CHECK(checked == 7);
  }
}
