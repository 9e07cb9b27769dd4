#include <catch2/catch.hpp>

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
pc::Plan RtnPlan(pc::Model& model, int bits, int64_t group) {
  const pc::MethodRegistry& reg = pc::MethodRegistry::Builtins();
  const pc::MethodInfo& info = reg.Get("rtn");
  pc::MethodParams p = pc::ResolveParams("rtn", info.params, {{"bits", int64_t{bits}}, {"group_size", group}}, {}, "test");
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
