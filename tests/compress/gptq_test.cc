// GPTQ: error below RTN's at the same bits and group, parity with the reference algorithm
// (obs_reference.py) for groups, partial groups, act-order and static groups, block-size
// invariance, and through the engine (true-sequential) with the logged errors.
#include <catch2/catch.hpp>

#include <ATen/ATen.h>

#include <cmath>

#include "compress/quantizer.h"
#include "model/model.h"
#include "tests/compress/prune_test_util.h"
#include "tests/model/model_test_util.h"
#include "tests/test_support.h"

using pc::ParamScalar;
using pc::test::Compress;
using pc::test::MakeMethod;
using pc::test::OutputRelError;
using Params = std::map<std::string, ParamScalar>;

namespace {
Params Q(int64_t bits, int64_t group, Params more = {}) {
  more["bits"] = bits;
  more["group_size"] = group;
  return more;
}
}  // namespace

TEST_CASE("gptq: reconstruction error below RTN's at the same bits and group", "[compress][gptq]") {
  for (uint64_t seed : {1, 2}) {
    at::Tensor x = pc::test::SyntheticInputs(400, 100, seed);
    at::Tensor w = pc::test::RandomWeight(48, 100, seed + 20);
    for (Params p : {Q(4, 32), Q(3, 32), Q(4, -1), Q(3, 128), Q(2, 16), Q(4, 32, {{"zero_point", false}}),
                     Q(3, 32, {{"act_order", true}}), Q(3, 32, {{"static_groups", true}}),
                     Q(3, 32, {{"act_order", true}, {"static_groups", true}}), Q(3, 24)}) {
      auto g = MakeMethod("gptq", p);
      INFO("seed " << seed << " " << g->Describe());
      pc::Record rec;
      const double err = OutputRelError(x, w, Compress(*g, w, x, &rec));
      pc::QuantSpec spec{static_cast<int>(std::get<int64_t>(p.at("bits"))), std::get<int64_t>(p.at("group_size")),
                         !p.count("zero_point")};
      // The naive counterpart: round to nearest with GPTQ's own quantizer (unsigned codes).
      pc::QuantSpec unsigned_spec = spec;
      unsigned_spec.zero_point = true;
      const double rtn = OutputRelError(x, w, pc::FakeQuantizeWith(w, pc::ComputeGptqQuantParams(w, spec), unsigned_spec));
      CHECK(err < rtn);
      CHECK(err < OutputRelError(x, w, pc::FakeQuantize(w, spec)));  // and below the shared RTN's
      CHECK(OutputRelError(x, w, g->NaiveWeight(w)) == Approx(rtn).epsilon(1e-12));
      CHECK(rec.values.at("gptq_loss") > 0);
    }
  }
}

// Per channel and with static groups the lazy blocks change nothing but rounding. Dynamic groups
// take their parameters from W as it stood when the block began (the reference's rule), so there
// the result is the same for blocks of 1 and of g columns (a group begins where a block does) and
// differs for longer blocks (parity with the reference below covers those).
TEST_CASE("gptq: results do not depend on the lazy-update block size", "[compress][gptq]") {
  at::Tensor x = pc::test::SyntheticInputs(200, 64, 3);
  at::Tensor w = pc::test::RandomWeight(16, 64, 4);
  for (Params base : {Q(4, 16), Q(3, -1), Q(4, 16, {{"act_order", true}}), Q(4, 16, {{"static_groups", true}})}) {
    const bool dynamic = !base.count("static_groups") && std::get<int64_t>(base.at("group_size")) > 0;
    Params a = base, b = base;
    a["block_size"] = int64_t{1};
    b["block_size"] = dynamic ? int64_t{16} : int64_t{128};
    pc::Record ra, rb;
    at::Tensor qa = Compress(*MakeMethod("gptq", a), w, x, &ra);
    at::Tensor qb = Compress(*MakeMethod("gptq", b), w, x, &rb);
    INFO(MakeMethod("gptq", base)->Describe());
    CHECK(pc::test::MismatchFraction(qa, qb) < pc::test::kMaxBlockSizeMismatch);
    CHECK(ra.values.at("gptq_loss") == Approx(rb.values.at("gptq_loss")).epsilon(pc::test::kBlockSizeLossRelTol));
  }
}

TEST_CASE("gptq: parity with the reference algorithm (obs_reference.py)", "[compress][gptq]") {
  PC_SKIP_IF(!pc::test::HavePythonTorch(), "/usr/bin/python3 with torch is absent");
  at::Tensor x = pc::test::SyntheticInputs(300, 100, 31);  // 100 columns: groups of 32 leave a partial group of 4
  at::Tensor w = pc::test::RandomWeight(24, 100, 32);
  // Dead columns (an input that is 0 on every token): the reference zeros their weights.
  for (int64_t c : {5, 40, 97}) x.select(1, c).zero_();
  auto ref = [](int64_t bits, int64_t group, int64_t block, bool act, bool stat, bool zp = true) {
    return nlohmann::json{{"bits", bits},          {"group_size", group}, {"block_size", block}, {"act_order", act},
                          {"static_groups", stat}, {"zero_point", zp},    {"damp", 0.01}};
  };
  struct Case {
    Params ours;
    nlohmann::json ref;
  };
  // Dynamic groups: the reference computes a group's parameters from W as it stands at the start
  // of the lazy block; groups shorter than the block (g32, g16 in blocks of 128 and 64), groups
  // that straddle two blocks (g48 in blocks of 32), and groups = blocks.
  const std::vector<Case> cases = {
      {Q(4, 32, {{"block_size", int64_t{32}}}), ref(4, 32, 32, false, false)},
      {Q(3, 32, {{"block_size", int64_t{32}}, {"act_order", true}}), ref(3, 32, 32, true, false)},
      {Q(4, 32), ref(4, 32, 128, false, false)},
      {Q(3, 16, {{"block_size", int64_t{64}}, {"act_order", true}}), ref(3, 16, 64, true, false)},
      {Q(3, 48, {{"block_size", int64_t{32}}}), ref(3, 48, 32, false, false)},
      {Q(4, 32, {{"zero_point", false}}), ref(4, 32, 128, false, false, false)},
      {Q(4, 128), ref(4, 128, 128, false, false)},  // group >= in: one group from W after the dead columns
      {Q(3, 32, {{"static_groups", true}}), ref(3, 32, 128, false, true)},
      {Q(3, 32, {{"static_groups", true}, {"act_order", true}}), ref(3, 32, 128, true, true)},
      {Q(4, -1, {{"zero_point", false}}), ref(4, -1, 128, false, false, false)},
      {Q(2, -1, {{"act_order", true}}), ref(2, -1, 128, true, false)},
  };
  for (const Case& c : cases) {
    auto g = MakeMethod("gptq", c.ours);
    INFO(g->Describe());
    pc::Record rec;
    at::Tensor ours = Compress(*g, w, x, &rec);
    double ref_loss = 0;
    at::Tensor theirs = pc::test::ObsReference("gptq", w, x, c.ref, &ref_loss);
    // Identical on the development machine; a different BLAS may round a few values to the next
    // grid point (summation order), hence the allowance.
    CHECK(pc::test::MismatchFraction(ours, theirs) < pc::test::kMaxGridMismatch);
    CHECK(rec.values.at("gptq_loss") == Approx(ref_loss).epsilon(pc::test::kLossRelTol));
    CHECK(rec.values.at("dead_columns") == 3);
    for (int64_t c : {5, 40, 97}) CHECK(ours.select(1, c).abs().max().item<float>() == 0.0f);
  }
}

TEST_CASE("gptq and sparsegpt through the engine: logged error below the naive method's on every linear",
          "[compress][gptq]") {
  PC_SKIP_IF(!pc::test::HavePythonTorch(), "/usr/bin/python3 with torch is absent");
  struct Case {
    const char* method;
    Params params;
  };
  const std::vector<Case> cases = {
      {"gptq", Q(4, 16)},
      {"gptq", Q(3, 16, {{"true_sequential", true}})},
      {"gptq", Q(3, 16, {{"act_order", true}, {"true_sequential", true}})},
      {"sparsegpt", {{"sparsity", 0.5}}},
      {"sparsegpt", {{"sparsity", 0.5}, {"pattern", std::string("2:4")}}},
  };
  for (const char* arch : {"llama", "gpt_neox", "opt"}) {
    std::string dir = pc::test::MakeReferenceModel(arch);
    for (const Case& c : cases) {
      auto model = pc::Model::Load(dir);
      // 4 windows: the logged errors use the same tokens as the Hessian.
      pc::test::CompressedModel cm = pc::test::CompressModel(*model, c.method, c.params, 4, 32);
      int n = 0;
      for (const auto& rec : cm.result.records) {
        if (rec.kind != "linear") continue;
        INFO(arch << " " << c.method << " " << rec.name << " " << rec.text.at("params"));
        CHECK(rec.values.at("err_after") <= rec.values.at("err_before"));
        ++n;
      }
      CHECK(n == model->num_layers() * static_cast<int>(model->arch().linears.size()));
    }
  }
}
