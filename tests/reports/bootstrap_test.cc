// Bootstrap intervals, the paired difference, leave-one-group-out.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/error.h"
#include "reports/bootstrap.h"
#include "reports/format.h"
#include "tests/reports/reports_test_support.h"

using Catch::Matchers::Contains;
using pc::reports::BootstrapOptions;
using pc::reports::Coefficient;
using pc::reports::Orientation;

namespace {

// n runs: an outcome, a predictor that tracks it closely ("perp") and one that tracks it loosely ("iso").
struct Runs {
  std::vector<double> outcome, perp, iso, cosine;
  std::vector<std::string> family;
};
Runs MakeRuns(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Runs r;
  const char* families[] = {"awq", "rtn", "wanda", "magnitude"};
  for (int i = 0; i < n; ++i) {
    const double damage = 0.05 + pc::test::Uniform(rng);
    r.outcome.push_back(damage + 0.05 * pc::test::Uniform(rng));
    r.perp.push_back(damage * (1 + 0.1 * pc::test::Uniform(rng)));
    r.iso.push_back(damage + 0.8 * pc::test::Uniform(rng));
    r.cosine.push_back(1 - 0.1 * r.perp.back());
    r.family.push_back(families[i % 4]);
  }
  return r;
}

}  // namespace

TEST_CASE("resampler: documented scheme, reproducible, uniform", "[reports]") {
  // The first indices for (n = 7, seed = 12345) are part of the documented scheme: they must not change
  // between machines, compilers or versions (a changed value silently changes every recorded interval).
  pc::reports::Resampler a(7, 12345), b(7, 12345);
  std::vector<size_t> ia, ib;
  a.Next(&ia);
  b.Next(&ib);
  CHECK(ia == ib);
  std::mt19937_64 standard;  // the C++ standard fixes this value ([rand.predef]): the engine is portable
  standard.discard(9999);
  CHECK(standard() == 9981545732273789042ull);
  std::mt19937_64 engine(12345);  // n = 7: reject words below 2^64 mod 7 = 2 (practically never)
  for (size_t i = 0; i < 7; ++i) CHECK(ia[i] == engine() % 7);
  a.Next(&ia);
  CHECK(ia != ib);

  pc::reports::Resampler c(3, 1);
  std::vector<size_t> counts(3, 0), idx;
  for (int k = 0; k < 10000; ++k) {
    c.Next(&idx);
    for (size_t i : idx) ++counts[i];
  }
  for (size_t n : counts) CHECK(std::fabs(double(n) / 30000.0 - 1.0 / 3.0) < 0.01);
}

TEST_CASE("bootstrap: same seed identical, different seed different, contains the estimate", "[reports]") {
  const Runs r = MakeRuns(40, 3);
  BootstrapOptions o;
  o.seed = 11;
  const auto a = pc::reports::BootstrapCorrelations(r.perp, r.outcome, o);
  const auto b = pc::reports::BootstrapCorrelations(r.perp, r.outcome, o);
  o.seed = 12;
  const auto c = pc::reports::BootstrapCorrelations(r.perp, r.outcome, o);
  REQUIRE(a.size() == 4);
  for (size_t k = 0; k < a.size(); ++k) {
    INFO(pc::reports::CoefficientKey(pc::reports::kAllCoefficients[k]));
    REQUIRE(a[k].has_interval());
    CHECK(*a[k].lo == *b[k].lo);
    CHECK(*a[k].hi == *b[k].hi);
    CHECK((*a[k].lo != *c[k].lo || *a[k].hi != *c[k].hi));
    CHECK(*a[k].lo <= *a[k].estimate.value);
    CHECK(*a[k].estimate.value <= *a[k].hi);
    CHECK(*a[k].lo < *a[k].hi);
    CHECK(a[k].used == 2000);
    CHECK(a[k].dropped == 0);
    CHECK(a[k].seed == 11);
    // One coefficient alone uses the same resamples as all four together.
    const auto single = pc::reports::BootstrapCorrelation(pc::reports::kAllCoefficients[k], r.perp, r.outcome,
                                                          BootstrapOptions{2000, 11, 0.95});
    CHECK(*single.lo == *a[k].lo);
    CHECK(*single.hi == *a[k].hi);
  }
  // A wider confidence gives a wider interval.
  const auto wide = pc::reports::BootstrapCorrelation(Coefficient::kSpearman, r.perp, r.outcome,
                                                      BootstrapOptions{2000, 11, 0.99});
  CHECK(*wide.lo <= *a[2].lo);
  CHECK(*wide.hi >= *a[2].hi);
}

TEST_CASE("bootstrap: undefined resamples are dropped and counted, undefined estimates give no interval",
          "[reports]") {
  // Four equal x of five: a resample that misses run 4 (or takes only it) has constant x.
  const std::vector<double> x = {1, 1, 1, 1, 2}, y = {1, 2, 3, 4, 5};
  const auto r = pc::reports::BootstrapCorrelation(Coefficient::kPearson, x, y, BootstrapOptions{});
  REQUIRE(r.estimate.ok());
  CHECK(r.used + r.dropped == 2000);
  // P(constant) = (4/5)^5 + (1/5)^5 = 0.328
  CHECK(r.dropped > 550);
  CHECK(r.dropped < 760);
  CHECK(r.has_interval());

  const auto few = pc::reports::BootstrapCorrelation(Coefficient::kSpearman, {1, 2, 3}, {1, 2, 3}, BootstrapOptions{});
  CHECK(!few.has_interval());
  CHECK(few.estimate.reason == "insufficient");
  CHECK(few.used == 0);
  CHECK(pc::reports::FormatWithInterval(few) == "insufficient");

  const auto logs = pc::reports::BootstrapCorrelations({1, 2, 3, 0, 5, 6}, {2, 1, 4, 3, 6, 5}, BootstrapOptions{});
  CHECK(logs[0].has_interval());
  CHECK(!logs[1].has_interval());
  CHECK(logs[1].estimate.reason == "n/a");
  CHECK_THAT(logs[1].detail, Contains("value <= 0"));
}

TEST_CASE("bootstrap: options are validated", "[reports]") {
  const std::vector<double> v = {1, 2, 3, 4, 5};
  CHECK_THROWS_WITH(pc::reports::BootstrapCorrelation(Coefficient::kPearson, v, v, BootstrapOptions{0, 1, 0.95}),
                    Contains("resamples must be >= 1 (got 0)"));
  CHECK_THROWS_WITH(pc::reports::BootstrapCorrelation(Coefficient::kPearson, v, v, BootstrapOptions{10, 1, 1.0}),
                    Contains("confidence must lie in (0, 1) (got 1)"));
}

TEST_CASE("paired bootstrap of a difference of correlations", "[reports]") {
  const Runs r = MakeRuns(30, 5);
  BootstrapOptions o;
  o.seed = 99;
  pc::reports::DifferenceSpec spec;
  spec.a_name = "perp";
  spec.b_name = "iso";

  SECTION("two identical predictors: exactly [0, 0], never positive") {
    const auto d = pc::reports::BootstrapCorrelationDifference(r.iso, r.iso, r.outcome, spec, o);
    REQUIRE(d.has_interval());
    CHECK(*d.estimate.value == 0);
    CHECK(*d.lo == 0);
    CHECK(*d.hi == 0);
    CHECK(*d.share_positive == 0);
    CHECK(d.used == 2000);
    CHECK(d.samples.size() == 2000);
  }
  SECTION("a better predictor: positive difference, same seed identical") {
    const auto d = pc::reports::BootstrapCorrelationDifference(r.perp, r.iso, r.outcome, spec, o);
    const auto again = pc::reports::BootstrapCorrelationDifference(r.perp, r.iso, r.outcome, spec, o);
    const double rho_perp = *pc::reports::Spearman(r.perp, r.outcome).value;
    const double rho_iso = *pc::reports::Spearman(r.iso, r.outcome).value;
    CHECK(*d.estimate.value == Approx(rho_perp - rho_iso).epsilon(1e-15));
    CHECK(*d.lo > 0);
    CHECK(*d.share_positive > 0.95);
    CHECK(*d.lo == *again.lo);
    CHECK(d.samples == again.samples);
    // Swapping A and B mirrors the distribution.
    const auto swapped = pc::reports::BootstrapCorrelationDifference(r.iso, r.perp, r.outcome, spec, o);
    CHECK(*swapped.hi == Approx(-*d.lo).margin(1e-15));
    CHECK(*swapped.share_positive == Approx(1 - *d.share_positive));
  }
  SECTION("orientation: a cosine predictor is compared by its oriented coefficient") {
    spec.a_name = "cosine";
    spec.a = Orientation::kHigherIsBetter;
    spec.b_name = "perp";
    // cosine = 1 - 0.1·perp: the same ordering reversed, so the oriented difference is exactly 0.
    const auto d = pc::reports::BootstrapCorrelationDifference(r.cosine, r.perp, r.outcome, spec, o);
    CHECK(*d.estimate.value == Approx(0).margin(1e-12));
    CHECK(*d.hi == Approx(0).margin(1e-12));
    spec.a = Orientation::kHigherIsWorse;  // wrongly oriented: far worse than perp
    const auto wrong = pc::reports::BootstrapCorrelationDifference(r.cosine, r.perp, r.outcome, spec, o);
    CHECK(*wrong.estimate.value < -1.5);
    spec.compare = pc::reports::Compare::kAbsolute;  // |ρ| ignores the direction
    const auto absolute = pc::reports::BootstrapCorrelationDifference(r.cosine, r.perp, r.outcome, spec, o);
    CHECK(*absolute.estimate.value == Approx(0).margin(1e-12));
  }
  SECTION("errors and undefined estimates") {
    CHECK_THROWS_WITH(pc::reports::BootstrapCorrelationDifference({1, 2}, {1, 2, 3}, r.outcome, spec, o),
                      Contains("perp has 2 values but iso has 3"));
    const std::vector<double> constant(r.iso.size(), 1.0);
    const auto d = pc::reports::BootstrapCorrelationDifference(r.perp, constant, r.outcome, spec, o);
    CHECK(!d.has_interval());
    CHECK(d.estimate.reason == "n/a");
    CHECK(d.detail == "iso is constant");
  }
}

TEST_CASE("leave one group out", "[reports]") {
  const Runs r = MakeRuns(24, 8);
  const auto out = pc::reports::LeaveOneGroupOut(Coefficient::kKendallTauB, r.perp, r.outcome, r.family);
  REQUIRE(out.size() == 4);
  CHECK(out[0].group == "awq");
  CHECK(out[3].group == "magnitude");
  for (const auto& g : out) {
    CHECK(g.left_out == 6);
    CHECK(g.remaining == 18);
    std::vector<double> x, y;
    for (size_t i = 0; i < r.family.size(); ++i) {
      if (r.family[i] == g.group) continue;
      x.push_back(r.perp[i]);
      y.push_back(r.outcome[i]);
    }
    CHECK(*g.value.value == *pc::reports::KendallTauB(x, y).value);
  }
  // Two groups of 6 and 2: without the 6 only 2 runs remain.
  const std::vector<std::string> two = {"a", "a", "a", "b", "a", "a", "b", "a"};
  const std::vector<double> v = {1, 2, 3, 4, 5, 6, 7, 8};
  const auto small = pc::reports::LeaveOneGroupOut(Coefficient::kSpearman, v, v, two);
  CHECK(small[0].value.reason == "insufficient");
  CHECK(*small[1].value.value == 1.0);
  CHECK_THROWS_WITH(pc::reports::LeaveOneGroupOut(Coefficient::kSpearman, v, v, {"a"}),
                    Contains("1 group names for 8 runs"));
}

TEST_CASE("bootstrap at the size of a large sweep", "[reports]") {
  // Its cost is measured by bench/reports/bootstrap_bench (no timed assertion here, docs/RELIABILITY.md).
  const Runs r = MakeRuns(300, 2);
  const auto all = pc::reports::BootstrapCorrelations(r.perp, r.outcome, BootstrapOptions{});
  REQUIRE(all.size() == 4);
  for (const auto& interval : all) CHECK(interval.has_interval());
}
