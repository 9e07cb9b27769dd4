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

TEST_CASE("awq scales: llm-awq's x^alpha, clamped and normalised, alpha 0 is exactly 1", "[compress][awq]") {
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

TEST_CASE("awq grids: llm-awq's i/n_grid and llm-compressor's s = 1 first, then i/(n_grid-2) up to 1",
          "[compress][awq]") {
  using G = pc::awq::SearchOptions::Grid;
  pc::awq::SearchOptions o;
  o.duo = true;
  auto awq = pc::awq::GridPoints(o);  // default: llm-awq
  REQUIRE(awq.size() == 20);
  CHECK(awq[0] == std::make_pair(0.0, true));
  CHECK(awq[19].first == Approx(0.95));
  o.grid = G::kLlmCompressor;
  auto lc = pc::awq::GridPoints(o);
  REQUIRE(lc.size() == 20);
  CHECK(lc[0] == std::make_pair(0.0, false));  // identity scales
  for (int i = 0; i <= 18; ++i) {
    CHECK(lc[i + 1].second);
    CHECK(lc[i + 1].first == static_cast<double>(i) / 18);
  }
  CHECK(lc[19].first == 1.0);
  o.duo = false;
  auto plain = pc::awq::GridPoints(o);
  REQUIRE(plain.size() == 20);
  for (int i = 0; i < 20; ++i) CHECK(plain[i] == std::make_pair(static_cast<double>(i) / 19, false));
  o.fixed_alpha = 0.4;
  CHECK(pc::awq::GridPoints(o) == std::vector<std::pair<double, bool>>{{0.4, false}});
}

TEST_CASE("awq search on llm-compressor's duo grid: its s = 1 point can win, which llm-awq's duo grid lacks",
          "[compress][awq]") {
  pc::Linear a, b;
  a.weight = Randn({6, 16}, 11);
  b.weight = Randn({5, 16}, 12);
  const pc::QuantSpec spec{4, -1, true};
  const at::Tensor qa = pc::FakeQuantize(a.weight, spec), qb = pc::FakeQuantize(b.weight, spec);
  // Known answer: the loss is the distance of the members' weights from plain RTN, 0 exactly at s = 1.
  auto evaluate = [&]() {
    pc::awq::DirSums d;
    d.iso = (a.weight - qa).pow(2).sum().item<double>() + (b.weight - qb).pow(2).sum().item<double>();
    d.elements = a.weight.numel() + b.weight.numel();
    return d;
  };
  const at::Tensor x_mean = Randn({16}, 13).abs() + 0.1;
  pc::awq::SearchOptions o;
  o.spec = spec;
  o.duo = true;
  o.grid = pc::awq::SearchOptions::Grid::kLlmCompressor;
  pc::awq::SearchResult r = pc::awq::SearchScales({&a, &b}, x_mean, o, evaluate, "test");
  REQUIRE(r.alpha.size() == 20);
  CHECK(r.best == 0);
  CHECK(r.objective[0] == 0.0);
  CHECK(r.duo == std::vector<double>([] { std::vector<double> v(20, 1.0); v[0] = 0.0; return v; }()));
  CHECK(r.scales.equal(at::ones({16})));
  CHECK(r.alpha.back() == 1.0);
  // The members are restored after the search.
  CHECK(a.weight.equal(Randn({6, 16}, 11)));
  o.grid = pc::awq::SearchOptions::Grid::kLlmAwq;
  pc::awq::SearchResult r2 = pc::awq::SearchScales({&a, &b}, x_mean, o, evaluate, "test");
  CHECK(r2.alpha.back() == Approx(0.95));
  CHECK(r2.objective[r2.best] > 0.0);  // no point of llm-awq's duo grid has s = 1
}
