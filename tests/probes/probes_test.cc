// Unit tests of the probes library: option parsing, statistics, the perturbation and scaling kernels.
#include <ATen/CPUGeneratorImpl.h>
#include <catch2/catch.hpp>

#include <cmath>

#include "core/directional.h"
#include "core/error.h"
#include "core/strings.h"
#include "core/tensor_util.h"
#include "probes/decompose.h"
#include "probes/layers.h"
#include "probes/perturb.h"
#include "probes/scale.h"
#include "probes/stats.h"

using Catch::Matchers::Contains;
using namespace pc;
using namespace pc::probes;

TEST_CASE("layer ranges: 0-based inclusive, all, middle, errors name the model's layer count", "[probes]") {
  LayerRange r = ParseLayerRange("1-3", 6, "--layers");
  CHECK(r.first == 1);
  CHECK(r.last == 3);
  CHECK(r.count() == 3);
  CHECK(r.Contains(3));
  CHECK_FALSE(r.Contains(4));
  CHECK(r.ToString() == "1-3");
  CHECK(ParseLayerRange("2", 6, "--layers").ToString() == "2");
  CHECK(ParseLayerRange("all", 6, "--layers").ToString() == "0-5");
  CHECK(ParseLayerRange("middle", 24, "--layers").ToString() == "8-15");  // the seed's layers of Pythia-410m
  CHECK(ParseLayerRange("middle", 4, "--layers").ToString() == "1");
  CHECK(ParseLayerRange("middle", 1, "--layers").ToString() == "0");
  CHECK_THROWS_WITH(ParseLayerRange("2-6", 6, "--layers"), Contains("the model has 6 layers (0-5)"));
  CHECK_THROWS_WITH(ParseLayerRange("9", 6, "--layers"), Contains("layer 9 is out of range"));
  CHECK_THROWS_WITH(ParseLayerRange("3-1", 6, "--layers"), Contains("expected A-B with 0 <= A <= B"));
  CHECK_THROWS_WITH(ParseLayerRange("-1", 6, "--layers"), Contains("--layers: expected A-B"));
  CHECK_THROWS_WITH(ParseLayerRange("x", 6, "--repair-layers"), Contains("--repair-layers"));
}

TEST_CASE("space, kinds and repairs parse, unknown names are listed", "[probes]") {
  CHECK(ParseSpace("residual", "--space") == Space::kResidual);
  CHECK(ParseSpace("value", "--space") == Space::kValue);
  CHECK_THROWS_WITH(ParseSpace("values", "--space"), Contains("--space: unknown space 'values' (expected residual or value)"));
  CHECK(ParsePerturbKinds("magnitude,direction", "--kinds").size() == 2);
  CHECK(ParsePerturbKinds("direction", "--kinds")[0] == PerturbKind::kDirection);
  CHECK_THROWS_WITH(ParsePerturbKinds("angle", "--kinds"), Contains("unknown perturbation 'angle'"));
  CHECK_THROWS_WITH(ParsePerturbKinds("magnitude,magnitude", "--kinds"), Contains("listed twice"));
  CHECK(ParseRepairKinds("none", "--repair").empty());
  CHECK(ParseRepairKinds("attention,norm", "--repair").size() == 2);
  CHECK_THROWS_WITH(ParseRepairKinds("mlp", "--repair"), Contains("--repair: unknown repair 'mlp'"));
  // α/β lists go through core's list parser with the option's name.
  CHECK_THROWS_WITH(ParseDoubleList("0,a,1", "--alpha"), Contains("--alpha: expected a number, got 'a'"));
  CHECK_THROWS_WITH(ParseDoubleList(",", "--beta"), Contains("--beta: expected a comma-separated list"));
}

TEST_CASE("percentiles follow numpy's linear interpolation, histograms and mean +- std", "[probes]") {
  Summary s = Summarize({4, 1, 3, 2, NAN});
  CHECK(s.n == 4);
  CHECK(s.mean == Approx(2.5));
  CHECK(s.min == 1);
  CHECK(s.max == 4);
  CHECK(s.pct[3] == Approx(2.5));     // np.percentile([1,2,3,4], 50)
  CHECK(s.pct[2] == Approx(1.75));    // 25
  CHECK(s.pct[6] == Approx(3.97));    // 99
  CHECK(Summarize({}).n == 0);
  CHECK(std::isnan(Summarize({}).mean));
  Histogram h = MakeHistogram({0, 0.5, 1, 2, -1}, 2, 0, 1);
  CHECK(h.counts == std::vector<int64_t>{1, 2});
  CHECK(h.below == 1);
  CHECK(h.above == 1);
  MeanStd m = MeanAndStd({1, 2, 3});
  CHECK(m.mean == Approx(2));
  CHECK(m.std == Approx(1));
  CHECK(MeanAndStd({5}).std == 0);
}

TEST_CASE("the directional accumulator splits exactly: shares add to 1, coefficient and cosine", "[probes]") {
  DirectionalAccum acc;
  // x = (3, 4) against r = (1, 0): c = 3, cos = 0.6, ‖x∥‖² = 9 of 25. A zero reference is skipped.
  at::Tensor x = at::tensor({3.0, 4.0, 1.0, 1.0}, at::kDouble).view({2, 2});
  at::Tensor r = at::tensor({1.0, 0.0, 0.0, 0.0}, at::kDouble).view({2, 2});
  acc.Add(x, r);
  CHECK(acc.tokens == 1);
  CHECK(acc.skipped == 1);
  CHECK(acc.parallel_share() == Approx(9.0 / 25));
  CHECK(acc.perpendicular_share() == Approx(16.0 / 25));
  CHECK(acc.coef[0] == Approx(3));
  CHECK(acc.cos[0] == Approx(0.6));
  CHECK(acc.mean_rel_norm() == Approx(5));
  at::Tensor xs = at::randn({200, 16}, at::kDouble), rs = at::randn({200, 16}, at::kDouble);
  DirectionalAccum b;
  b.Add(xs, rs);
  CHECK(b.parallel_share() + b.perpendicular_share() == Approx(1.0).epsilon(1e-12));
}

TEST_CASE("L2-matched perturbation moves every token by exactly delta", "[probes]") {
  at::Generator gen = at::detail::createCPUGenerator(7);
  at::Tensor h = at::randn({500, 64}, gen, at::kDouble) * at::rand({500, 1}, gen, at::kDouble) * 10;  // norms 0..~80
  for (PerturbKind kind : {PerturbKind::kMagnitude, PerturbKind::kDirection}) {
    for (double delta : {0.5, 3.0, 20.0}) {
      PerturbedStates p = PerturbStates(h, kind, delta, gen);
      at::Tensor norm = h.norm(2, {-1});
      at::Tensor moved = p.skipped.logical_not();
      if (kind == PerturbKind::kDirection) {
        CHECK(p.skipped.equal(norm < delta / 2));
        CHECK(p.reversing.sum().item<int64_t>() == 0);
      } else {
        // Skipped: too short, or drawn shrinking by δ ≥ ‖h‖ (which would reverse h), counted apart.
        CHECK(p.skipped.equal((norm < delta / 2).logical_or(p.reversing)));
        CHECK(p.reversing.logical_and(norm > delta).sum().item<int64_t>() == 0);
        if (delta == 20.0) CHECK(p.reversing.sum().item<int64_t>() > 10);  // norms in [10, 20]: about half shrink
      }
      at::Tensor disp = (p.h - h).norm(2, {-1});
      CHECK(((disp - delta).abs() / delta).masked_select(moved).max().item<double>() < 1e-12);
      CHECK(disp.masked_select(p.skipped).abs().max().item<double>() == 0);  // skipped tokens untouched (both kinds)
      at::Tensor new_norm = p.h.norm(2, {-1});
      if (kind == PerturbKind::kDirection) {
        CHECK(((new_norm - norm).abs() / norm).masked_select(moved).max().item<double>() < 1e-12);  // norm kept
      } else {
        // Direction kept on every perturbed token: h' is a positive multiple of h, ‖h'‖ = ‖h‖ ± δ.
        at::Tensor cos = (p.h * h).sum(-1) / (new_norm * norm);
        at::Tensor dn = (new_norm - norm).abs();
        CHECK((cos.masked_select(moved) - 1).abs().max().item<double>() < 1e-12);
        CHECK(((dn - delta).abs() / delta).masked_select(moved).max().item<double>() < 1e-10);
      }
    }
  }
  // Both signs occur for magnitude; a rotation by θ = 2·asin(δ/2‖h‖).
  at::Tensor one = at::ones({1000, 8}, at::kDouble);  // ‖h‖ = sqrt(8)
  PerturbedStates m = PerturbStates(one, PerturbKind::kMagnitude, 1.0, gen);
  double grown = (m.h.norm(2, {-1}) > one.norm(2, {-1})).to(at::kDouble).mean().item<double>();
  CHECK(grown > 0.4);
  CHECK(grown < 0.6);
  PerturbedStates d = PerturbStates(one, PerturbKind::kDirection, 1.0, gen);
  at::Tensor cos = (d.h * one).sum(-1) / 8.0;
  CHECK(cos.sub(std::cos(2 * std::asin(1.0 / (2 * std::sqrt(8.0))))).abs().max().item<double>() < 1e-12);
  // δ = 0 is the identity (the library accepts it; the command asks for δ > 0).
  CHECK(PerturbStates(h, PerturbKind::kDirection, 0.0, gen).h.equal(h));
  CHECK(PerturbStates(h, PerturbKind::kMagnitude, 0.0, gen).h.equal(h));
  CHECK_THROWS_WITH(PerturbStates(h, PerturbKind::kMagnitude, -1.0, gen), Contains("delta must be >= 0"));
}

TEST_CASE("value-space kernels: alpha = beta = 1 and exclude-self with factor 1 are the identity", "[probes]") {
  const int64_t B = 2, H = 3, T = 5, hd = 4;
  at::Tensor probs = at::softmax(at::randn({B, H, T, T}).tril() - at::ones({T, T}).triu(1) * 1e9, -1);
  at::Tensor v = at::randn({B, H, T, hd});
  at::Tensor ctx = at::matmul(probs, v);
  CHECK(MaxRelDiff(ScaleValueSpace(probs, v, ctx, 1, 1), ctx) < 1e-6);
  CHECK(MaxRelDiff(ExcludeSelf(probs, v, ctx, 1), ctx) < 1e-6);
  // Factor 0 keeps exactly the self message a_ii·v_i; query 0 sees only itself.
  at::Tensor self = ExcludeSelf(probs, v, ctx, 0);
  at::Tensor expect = probs.diagonal(0, 2, 3).unsqueeze(-1) * v;
  CHECK(MaxRelDiff(self, expect) < 1e-6);
  CHECK(MaxRelDiff(self.select(2, 0), v.select(2, 0)) < 1e-6);
  // α = 0 leaves the part perpendicular to the own value vector.
  at::Tensor perp = ScaleValueSpace(probs, v, ctx, 0, 1);
  CHECK((perp * v).sum(-1).abs().max().item<double>() < 1e-4);
}
