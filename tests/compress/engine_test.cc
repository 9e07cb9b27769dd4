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
  auto model = pc::Model::Load(dir);
  auto original = pc::Model::Load(dir);
  pc::Plan plan = RtnPlan(*model, 4, 16);
  at::Tensor calib = pc::test::RandomTokens(6, 24, model->config().vocab_size, 1);
  pc::EngineOptions eo;
  eo.micro_batch = 4;
  pc::CompressResult r = pc::RunCompression(*model, plan, calib, eo);
  for (int l = 0; l < model->num_layers(); ++l) {
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
