// AWQ's numerical pieces against direct computations: scales, duo scaling, the directional
// loss sums against core/directional.h, the clipping search against a scalar reference.
#include <catch2/catch.hpp>

#include <ATen/ATen.h>

#include <cmath>

#include "compress/awq_search.h"
#include "compress/quantizer.h"
#include "core/directional.h"

namespace {
at::Tensor Randn(std::vector<int64_t> shape, uint64_t seed) {
  at::Generator g = at::detail::createCPUGenerator(seed);
  return at::randn(shape, g);
}
}  // namespace

TEST_CASE("awq scales: llm-awq's x^alpha, clamped and normalised; alpha 0 is exactly 1", "[compress][awq]") {
  at::Tensor x = Randn({40}, 1).abs();
  x[3] = 0.0f;  // a dead channel
  at::Tensor s0 = pc::awq::AwqScales(x, at::Tensor(), 0.0);
  CHECK(s0.equal(at::ones_like(s0)));
  for (double a : {0.05, 0.5, 0.95}) {
    at::Tensor s = pc::awq::AwqScales(x, at::Tensor(), a);
    at::Tensor raw = x.pow(a).clamp_min(1e-4);
    at::Tensor expect = raw / (raw.max() * raw.min()).sqrt();
    CHECK(at::allclose(s, expect, 1e-6, 0));
    CHECK((s.max() * s.min()).item<double>() == Approx(1.0).epsilon(1e-5));
  }
}

TEST_CASE("awq duo scaling: AutoAWQ's x^a / (w_mean^(1-a) + 1e-4) with w_mean per quantization group",
          "[compress][awq]") {
  at::Tensor w1 = Randn({6, 20}, 2), w2 = Randn({4, 20}, 3);
  pc::QuantSpec spec{4, 8, true};  // groups of 8, 8 and a tail of 4
  at::Tensor wm = pc::awq::DuoWeightMean({w1, w2}, spec);
  at::Tensor all = at::cat({w1, w2}, 0).abs();
  at::Tensor expect = at::empty({20});
  for (int64_t c = 0; c < 20; ++c) {
    const int64_t g0 = c / 8 * 8, g1 = std::min<int64_t>(20, g0 + 8);
    double acc = 0;
    for (int64_t r = 0; r < 10; ++r) {
      acc += all[r][c].item<double>() / (all[r].narrow(0, g0, g1 - g0).max().item<double>() + 1e-6);
    }
    expect[c] = acc / 10;
  }
  CHECK(at::allclose(wm, expect, 1e-5, 1e-7));
  at::Tensor x = Randn({20}, 4).abs();
  at::Tensor s = pc::awq::AwqScales(x, wm, 0.3);
  at::Tensor raw = (x.pow(0.3) / (wm.pow(0.7) + 1e-4)).clamp_min(1e-4);
  CHECK(at::allclose(s, raw / (raw.max() * raw.min()).sqrt(), 1e-6, 0));
}

TEST_CASE("awq loss sums equal the directional kernel's split", "[compress][awq]") {
  at::Tensor y = Randn({50, 24}, 5), e = Randn({50, 24}, 6) * 0.1;
  y[7].zero_();  // ‖y‖ = 0: all perpendicular
  e[9] = y[9] * 0.3;  // a purely parallel error
  pc::awq::DirSums s = pc::awq::SplitSums(e, y, pc::awq::InverseNorms(y));
  pc::DirectionalSplit ref = pc::SplitError(e, y);
  CHECK(s.iso == Approx(ref.iso.sum().item<double>()).epsilon(1e-5));
  CHECK(s.par == Approx(ref.par.sum().item<double>()).epsilon(1e-5));
  CHECK(s.perp == Approx(ref.perp.sum().item<double>()).epsilon(1e-5));
  CHECK(s.elements == 50 * 24);
  CHECK(pc::awq::Objective(s, 1, 1) == s.iso / (50 * 24));
  CHECK(pc::awq::Objective(s, 0.1, 1) == Approx((0.1 * s.par + s.perp) / (50 * 24)));
}

TEST_CASE("awq clipping search equals a per-(row, group) scalar reference", "[compress][awq]") {
  for (bool zero_point : {true, false}) {
    pc::QuantSpec spec{3, 8, zero_point};  // groups 8, 8, tail 4
    at::Tensor w = Randn({6, 20}, 7), x = Randn({30, 20}, 8);
    pc::awq::ClipResult c = pc::awq::SearchClip(w, x, spec, false, 10);
    REQUIRE(c.step.sizes() == at::IntArrayRef({6, 3}));
    for (int64_t r = 0; r < 6; ++r) {
      for (int64_t gi = 0; gi < 3; ++gi) {
        const int64_t c0 = gi * 8, len = std::min<int64_t>(8, 20 - c0);
        at::Tensor wg = w[r].narrow(0, c0, len), xg = x.narrow(1, c0, len);
        at::Tensor org = at::mv(xg, wg);
        const float mx = wg.abs().max().item<float>();
        double best = 1e30;
        int64_t best_i = 0;
        for (int i = 0; i < 10; ++i) {
          const float m = static_cast<float>(mx * (1.0 - i / 20.0));
          at::Tensor q = pc::FakeQuantizeReference(wg.clamp(-m, m).unsqueeze(0), {3, -1, zero_point}).squeeze(0);
          const double err = (at::mv(xg, q) - org).pow(2).mean().item<double>();
          if (err < best * (1 - 1e-6)) {
            best = err;
            best_i = i;
          }
        }
        INFO("row " << r << " group " << gi);
        CHECK(c.step[r][gi].item<int64_t>() == best_i);
      }
    }
    CHECK(c.step.gt(0).any().item<bool>());  // 3 bits: some group is worth clipping
    at::Tensor clipped = pc::awq::ApplyClip(w, c.max_val, spec);
    for (int64_t r = 0; r < 6; ++r) {
      for (int64_t col = 0; col < 20; ++col) {
        const float m = c.max_val[r][col / 8].item<float>(), v = w[r][col].item<float>();
        CHECK(clipped[r][col].item<float>() == std::min(std::max(v, -m), m));
      }
    }
  }
}

TEST_CASE("awq fp16 scales: every group scale is a float16 value", "[compress][awq]") {
  at::Tensor w = Randn({8, 32}, 9);
  pc::QuantSpec spec{4, 16, true};
  at::Tensor q = pc::awq::QuantizeWeight(w, spec, true);
  pc::QuantParams p = pc::ComputeQuantParams(w, spec);
  at::Tensor s16 = p.scale.to(at::kHalf).to(at::kFloat);
  CHECK(q.equal(pc::FakeQuantizeWith(w, {s16, p.zero}, spec)));
  CHECK_FALSE(q.equal(pc::FakeQuantize(w, spec)));
  CHECK(pc::awq::QuantizeWeight(w, spec, false).equal(pc::FakeQuantize(w, spec)));
}
