#include <catch2/catch.hpp>

#include <ATen/ATen.h>

#include "compress/quantizer.h"
#include "core/error.h"

using Catch::Matchers::Contains;

namespace {
void CheckAgainstReference(const at::Tensor& w, const pc::QuantSpec& spec) {
  at::Tensor ours = pc::FakeQuantize(w, spec);
  at::Tensor ref = pc::FakeQuantizeReference(w, spec);
  INFO(spec.Describe() << " on " << w.sizes());
  CHECK(ours.equal(ref));
}
}  // namespace

TEST_CASE("quantizer: known cases against the scalar reference", "[compress][quant]") {
  at::Tensor ramp = at::linspace(-1.0, 2.0, 64).view({2, 32});
  at::Tensor plateaus = at::cat({at::full({1, 16}, 0.25), at::full({1, 16}, -0.75)}, 1).repeat({3, 1});
  at::Tensor outlier = at::linspace(-0.1, 0.1, 48).view({1, 48}).clone();
  outlier[0][7] = 5.0;
  at::manual_seed(0);
  at::Tensor random = at::randn({7, 50});  // 50 = 3 x 16 + a partial tail group of 2
  for (int bits : {2, 3, 4, 8}) {
    for (int64_t g : {int64_t{-1}, int64_t{16}, int64_t{128}}) {
      for (bool zp : {true, false}) {
        pc::QuantSpec s{bits, g, zp};
        CheckAgainstReference(ramp, s);
        CheckAgainstReference(plateaus, s);
        CheckAgainstReference(outlier, s);
        CheckAgainstReference(random, s);
      }
    }
  }
}

TEST_CASE("quantizer: exact values on a ramp and a plateau", "[compress][quant]") {
  // 2-bit asymmetric over [0, 3]: scale 1, zero 0 -> the integers are exact.
  at::Tensor w = at::tensor({0.0f, 1.0f, 2.0f, 3.0f, 0.4f, 2.6f}).view({1, 6});
  at::Tensor q = pc::FakeQuantize(w, {2, -1, true});
  CHECK(q.equal(at::tensor({0.0f, 1.0f, 2.0f, 3.0f, 0.0f, 3.0f}).view({1, 6})));
  // Two-level plateaus that include zero are exact (both levels are grid points).
  at::Tensor two = at::tensor({0.0f, 0.3f, 0.3f, 0.0f, 0.5f, 0.0f, 0.5f, 0.5f}).view({2, 4});
  CHECK((pc::FakeQuantize(two, {4, 4, true}) - two).abs().max().item<float>() < 1e-6f);
  // A constant positive group, as llm-awq's quantizer does it: scale clamps at 1e-5/(2^b-1),
  // the zero point clamps at 0, so the value collapses to 1e-5 (faithful, and a reason for
  // AWQ's clamp; our scalar reference agrees).
  at::Tensor flat = at::full({1, 4}, 0.3f);
  CHECK(pc::FakeQuantize(flat, {4, 4, true}).max().item<float>() == Approx(1e-5f));
  // At most 2^b distinct values per group.
  at::manual_seed(3);
  at::Tensor r = at::randn({4, 64});
  at::Tensor q3 = pc::FakeQuantize(r, {3, 32, true});
  for (int row = 0; row < 4; ++row) {
    for (int g = 0; g < 2; ++g) CHECK(std::get<0>(at::_unique(q3[row].narrow(0, 32 * g, 32))).numel() <= 8);
  }
}

TEST_CASE("quantizer: a trailing partial group gets its own scale", "[compress][quant]") {
  // in = 40 with group 32: the last 8 columns are one group with their own (tiny) range.
  at::Tensor w = at::cat({at::linspace(-4, 4, 32).view({1, 32}), at::linspace(-0.01, 0.01, 8).view({1, 8})}, 1);
  pc::QuantSpec s{4, 32, true};
  at::Tensor q = pc::FakeQuantize(w, s);
  CHECK((q.narrow(1, 32, 8) - w.narrow(1, 32, 8)).abs().max().item<float>() < 0.01f / 15 + 1e-7f);
  auto params = pc::ComputeQuantParams(w, s);
  CHECK(params.scale.size(1) == 2);
  // in < group size: one group per row.
  CHECK(pc::QuantSpec{4, 128, true}.Groups(40) == 1);
  CHECK(pc::FakeQuantize(w, {4, 128, true}).equal(pc::FakeQuantize(w, {4, -1, true})));
}

TEST_CASE("quantizer: codes round-trip to the fake-quantized weights", "[compress][quant]") {
  at::manual_seed(4);
  at::Tensor w = at::randn({16, 96});
  pc::QuantSpec s{4, 32, true};
  auto p = pc::ComputeQuantParams(w, s);
  at::Tensor codes = pc::QuantCodes(w, p, s);
  CHECK(codes.min().item<int>() >= 0);
  CHECK(codes.max().item<int>() <= 15);
  at::Tensor idx = at::arange(96, at::kLong).div(32, "floor");
  at::Tensor back = (codes.to(at::kFloat) - p.zero.index_select(1, idx)) * p.scale.index_select(1, idx);
  CHECK(back.equal(pc::FakeQuantize(w, s)));
}

TEST_CASE("quantizer: bad specs are refused", "[compress][quant]") {
  CHECK_THROWS_WITH((pc::QuantSpec{1, 128, true}.Validate("r.yaml:4")), Contains("r.yaml:4") && Contains("2..8"));
  CHECK_THROWS_WITH((pc::QuantSpec{9, 128, true}.Validate("x")), Contains("bits must lie in 2..8"));
  CHECK_THROWS_WITH((pc::QuantSpec{4, 0, true}.Validate("x")), Contains("group_size"));
  CHECK_THROWS_WITH((pc::QuantSpec{4, -5, true}.Validate("x")), Contains("group_size"));
}
