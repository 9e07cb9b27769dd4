// --format awq-gemm: AutoAWQ's packing order, code recovery from fake-quantized weights, the
// exported folder against an independent python unpacker, refusals by name.
#include <catch2/catch.hpp>

#include <ATen/ATen.h>

#include <nlohmann/json.hpp>

#include "compress/awq_pack.h"
#include "compress/export.h"
#include "compress/quantizer.h"
#include "core/error.h"
#include "core/fs.h"
#include "tests/compress/awq_test_util.h"
#include "tests/model/model_test_util.h"
#include "tests/test_support.h"

using Catch::Matchers::Contains;
using pc::ParamScalar;

TEST_CASE("awq-gemm packing: nibble order 0,2,4,6,1,3,5,7 in int32 words", "[compress][awq][export]") {
  at::Tensor v = at::tensor({1, 2, 3, 4, 5, 6, 7, 8, 0, 15, 0, 0, 0, 0, 0, 0}, at::kInt).reshape({1, 16});
  at::Tensor p = pc::awq::PackAwqOrder(v);
  REQUIRE(p.sizes() == at::IntArrayRef({1, 2}));
  // nibbles from the lowest: v[0], v[2], v[4], v[6], v[1], v[3], v[5], v[7] = 1,3,5,7,2,4,6,8
  CHECK(static_cast<uint32_t>(p[0][0].item<int32_t>()) == 0x86427531u);
  CHECK(static_cast<uint32_t>(p[0][1].item<int32_t>()) == 0x000F0000u);  // 15 is v[9]: nibble 4
  at::Generator g = at::detail::createCPUGenerator(3);
  at::Tensor r = at::randint(0, 16, {5, 24}, g, at::kInt);
  CHECK(pc::awq::UnpackAwqOrder(pc::awq::PackAwqOrder(r)).equal(r));
}

TEST_CASE("awq-gemm codes: recovered exactly from fake-quantized weights", "[compress][awq][export]") {
  at::Generator g = at::detail::createCPUGenerator(4);
  at::Tensor w = at::randn({16, 64}, g);
  w[0].narrow(0, 0, 16).abs_();   // an all-positive group (zero clamped to 0)
  w[1].narrow(0, 16, 16).fill_(0.25f);  // a constant group
  w[2].narrow(0, 32, 16).zero_();       // an all-zero group
  for (bool zp : {true, false}) {
    pc::QuantSpec spec{4, 16, zp};
    at::Tensor q = pc::FakeQuantize(w, spec);
    pc::awq::GridCodes c = pc::awq::RecoverGridCodes(q, 4, 16, 1e-3);
    CHECK(c.bad_groups == 0);
    CHECK(c.groups == 64);
    at::Tensor col = at::arange(64, at::kLong).div(16, "floor");
    at::Tensor deq = (c.codes - c.zeros.index_select(1, col)).to(at::kFloat) * c.scales.index_select(1, col);
    CHECK(at::allclose(deq, q, 1e-6, 1e-7));
    CHECK(c.codes.min().item<int>() >= 0);
    CHECK(c.codes.max().item<int>() <= 15);
    CHECK(c.max_residual < 1e-4);
  }
  // With float16 group scales every group is reproduced bit for bit.
  pc::QuantSpec spec{4, 16, true};
  pc::QuantParams p = pc::ComputeQuantParams(w, spec);
  p.scale = p.scale.to(at::kHalf).to(at::kFloat);
  at::Tensor q16 = pc::FakeQuantizeWith(w, p, spec);
  pc::awq::GridCodes c16 = pc::awq::RecoverGridCodes(q16, 4, 16, 1e-3);
  CHECK(c16.bad_groups == 0);
  CHECK(c16.exact_f16_groups == c16.groups);
  // Weights that are not on a grid are reported, with the first bad (row, group).
  at::Tensor bad = pc::FakeQuantize(w, spec);
  bad[3][40] += 0.013f;
  pc::awq::GridCodes cb = pc::awq::RecoverGridCodes(bad, 4, 16, 1e-3);
  CHECK(cb.bad_groups == 1);
  CHECK(cb.first_bad_row == 3);
  CHECK(cb.first_bad_group == 2);
  CHECK(pc::awq::RecoverGridCodes(pc::FakeQuantize(w, {3, 16, true}), 4, 16, 1e-3).bad_groups == 0);  // 3-bit fits
  CHECK(pc::awq::RecoverGridCodes(pc::FakeQuantize(w, {5, 16, true}), 4, 16, 1e-3).bad_groups > 0);
}

namespace {

// Compresses `arch`'s reference model with `params`, saves it to OUT and exports OUT/awq-gemm.
std::string CompressAndExport(const std::string& arch, std::map<std::string, ParamScalar> params,
                              const std::string& method = "awq") {
  std::string dir = pc::test::MakeReferenceModel(arch);
  auto model = pc::test::LoadDetached(dir);
  pc::Plan plan = pc::test::MethodPlan(*model, method, params);
  pc::test::Compress(*model, plan);
  std::string out = pc::test::TempDir("awq-export-" + arch) + "/out";
  model->Save(out);
  auto saved = pc::Model::Load(out);
  pc::ExportAwqGemm(*saved, plan, out + "/awq-gemm");
  return out;
}

pc::test::RunResult Unpack(const std::string& out, bool exact) {
  return pc::test::Run("/usr/bin/python3 '" + pc::test::SourceDir() + "/tests/reference/awq_unpack.py' '" + out +
                       "'" + (exact ? " --exact" : ""));
}

}  // namespace

TEST_CASE("awq-gemm export unpacks to the fake-quantized weights (independent python unpacker)",
          "[compress][awq][export]") {
  PC_SKIP_IF(!pc::test::HavePythonTorch(), "/usr/bin/python3 with torch is absent");
  for (const std::string arch : {"llama", "gpt_neox", "opt", "gpt2"}) {
    INFO(arch);
    std::string out = CompressAndExport(arch, {{"group_size", int64_t{16}}, {"scale_dtype", std::string("f16")}});
    pc::test::RunResult r = Unpack(out, /*exact=*/true);
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    auto summary = nlohmann::json::parse(r.out);
    CHECK(summary["modules"].get<int>() == pc::Model::Load(out)->num_layers() * (arch == "llama" ? 7 : arch == "opt" ? 6 : 4));
    CHECK(summary["bit_exact_modules"] == summary["modules"]);
    auto cfg = nlohmann::json::parse(pc::fs::ReadFile(out + "/awq-gemm/config.json"));
    CHECK(cfg["quantization_config"]["group_size"] == 16);
    CHECK(cfg["quantization_config"]["version"] == "gemm");
    CHECK(cfg["quantization_config"]["modules_to_not_convert"].is_null());
  }
  // Float32 group scales (the default): codes exact, values to the fp16 rounding of the scales.
  std::string out = CompressAndExport("llama", {{"group_size", int64_t{16}}});
  pc::test::RunResult r = Unpack(out, /*exact=*/false);
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  // Per channel (group_size -1) and RTN work too.
  for (const std::string method : {"awq", "rtn"}) {
    std::string pc_out = CompressAndExport("gpt_neox", {{"group_size", int64_t{-1}}}, method);
    pc::test::RunResult rp = Unpack(pc_out, false);
    INFO(method << rp.out << rp.err);
    CHECK(rp.exit_code == 0);
    auto cfg = nlohmann::json::parse(pc::fs::ReadFile(pc_out + "/awq-gemm/config.json"));
    CHECK(cfg["quantization_config"]["group_size"] == -1);
  }
}

TEST_CASE("awq-gemm export refuses what the layout cannot hold, by name", "[compress][awq][export]") {
  PC_SKIP_IF(!pc::test::HavePythonTorch(), "/usr/bin/python3 with torch is absent");
  // 3-bit.
  CHECK_THROWS_WITH(CompressAndExport("llama", {{"bits", int64_t{3}}, {"group_size", int64_t{16}}, {"n_grid", int64_t{2}}}),
                    Contains("AutoAWQ's GEMM layout holds 4-bit weights; these linears have other widths: "
                             "model.layers.0.self_attn.q_proj (awq bits=3)"));
  // in_features not a multiple of the group size (48 = hidden; 80 = llama's intermediate).
  CHECK_THROWS_WITH(CompressAndExport("llama", {{"group_size", int64_t{32}}, {"n_grid", int64_t{2}}}),
                    Contains("model.layers.0.self_attn.q_proj (in_features 48 is not a multiple of group_size 32)"));
  // out_features not a multiple of 8, on a model of its own.
  auto model = pc::test::RandomLlama(36, 6, 6, 48, 1);
  pc::Plan plan = pc::test::MethodPlan(*model, "awq", {{"group_size", int64_t{12}}, {"n_grid", int64_t{2}}},
                                       {"model.layers.0.mlp.down_proj"});
  pc::test::Compress(*model, plan);
  std::string out = pc::test::TempDir("awq-export-refuse") + "/m";
  model->Save(out);
  auto saved = pc::Model::Load(out);
  CHECK_THROWS_WITH(pc::ExportAwqGemm(*saved, plan, out + "/awq-gemm"),
                    Contains("model.layers.0.self_attn.q_proj (out_features 36 is not a multiple of 8)"));
  CHECK_FALSE(pc::fs::Exists(out + "/awq-gemm"));
  // Weights that are not quantized as the plan says (here: the original ones).
  auto original = pc::test::RandomLlama(32, 4, 4, 48, 1);
  std::string o2 = pc::test::TempDir("awq-export-refuse2") + "/m";
  original->Save(o2);
  auto loaded = pc::Model::Load(o2);
  pc::Plan p2 = pc::test::MethodPlan(*loaded, "awq", {{"group_size", int64_t{16}}});
  CHECK_THROWS_WITH(pc::ExportAwqGemm(*loaded, p2, o2 + "/awq-gemm"),
                    Contains("--format awq-gemm: 'model.layers.0.self_attn.q_proj' is not on a 4-bit grid in"));
  // A skipped linear goes to modules_to_not_convert.
  pc::Plan p3 = pc::test::MethodPlan(*original, "awq", {{"group_size", int64_t{16}}, {"n_grid", int64_t{2}}},
                                     {"model.layers.0.mlp.down_proj"});
  pc::test::Compress(*original, p3);
  std::string o3 = pc::test::TempDir("awq-export-skip") + "/m";
  original->Save(o3);
  auto l3 = pc::Model::Load(o3);
  pc::ExportAwqGemm(*l3, p3, o3 + "/awq-gemm");
  auto cfg = nlohmann::json::parse(pc::fs::ReadFile(o3 + "/awq-gemm/config.json"));
  CHECK(cfg["quantization_config"]["modules_to_not_convert"] == nlohmann::json::array({"model.layers.0.mlp.down_proj"}));
}
