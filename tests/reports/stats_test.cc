// Correlation coefficients against scipy.stats and against brute force; degenerate inputs.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "core/error.h"
#include "core/strings.h"
#include "reports/stats.h"
#include "tests/reports/reports_test_support.h"
#include "tests/test_support.h"

using Catch::Matchers::Contains;
using pc::reports::Coefficient;
using pc::reports::kAllCoefficients;
using pc::reports::Orientation;
using pc::reports::Stat;

namespace {

struct Dataset {
  std::string name;
  std::vector<double> x, y;
};

// Kendall τ-b by counting all pairs (the O(n²) definition).
double BruteKendall(const std::vector<double>& x, const std::vector<double>& y) {
  double con = 0, dis = 0, tx = 0, ty = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    for (size_t j = i + 1; j < x.size(); ++j) {
      const double dx = x[i] - x[j], dy = y[i] - y[j];
      if (dx == 0 && dy == 0) continue;
      if (dx == 0) {
        ++tx;
      } else if (dy == 0) {
        ++ty;
      } else if ((dx > 0) == (dy > 0)) {
        ++con;
      } else {
        ++dis;
      }
    }
  }
  return (con - dis) / std::sqrt((con + dis + tx) * (con + dis + ty));
}

// Untied, x-tied, y-tied and doubly tied data for n = 5 .. 50, positive (log form defined), plus
// data with values <= 0 and a constant variable.
std::vector<Dataset> MakeDatasets() {
  std::mt19937_64 rng(20240611);
  using pc::test::Uniform;
  using pc::test::UniformInt;
  std::vector<Dataset> sets;
  for (int n : {5, 6, 8, 13, 21, 34, 50}) {
    Dataset untied{pc::Str("untied_", n), {}, {}}, tx{pc::Str("ties_x_", n), {}, {}},
        ty{pc::Str("ties_y_", n), {}, {}}, both{pc::Str("ties_both_", n), {}, {}},
        weak{pc::Str("weak_", n), {}, {}}, signed_{pc::Str("signed_", n), {}, {}};
    for (int i = 0; i < n; ++i) {
      const double a = 0.01 + 10 * Uniform(rng);
      untied.x.push_back(a);
      untied.y.push_back(std::pow(a, 1.3) * (0.5 + Uniform(rng)));
      tx.x.push_back(UniformInt(rng, 1, 4));
      tx.y.push_back(tx.x.back() + 3 * Uniform(rng));
      ty.x.push_back(1e-4 * (1 + Uniform(rng)));
      ty.y.push_back(ty.x.back() > 1.5e-4 ? UniformInt(rng, 2, 3) : UniformInt(rng, 1, 2));
      both.x.push_back(UniformInt(rng, 1, 3));
      both.y.push_back(both.x.back() == 3 ? UniformInt(rng, 2, 3) : UniformInt(rng, 1, 3));
      weak.x.push_back(1 + Uniform(rng));
      weak.y.push_back(1 + Uniform(rng));
      signed_.x.push_back(Uniform(rng) - 0.5);
      signed_.y.push_back(signed_.x.back() + Uniform(rng));
    }
    for (Dataset* d : {&untied, &tx, &ty, &both, &weak, &signed_}) {
      // Ties in "both" must include joint ties and ties in only one variable; make sure x is not constant.
      if (d->x.front() == d->x.back()) d->x.front() += 1;
      if (d->y.front() == d->y.back() && d != &ty) d->y.back() += 0.5;
      sets.push_back(*d);
    }
  }
  sets.push_back(Dataset{"constant_y", {1, 2, 3, 4, 5, 6}, {2, 2, 2, 2, 2, 2}});
  return sets;
}

std::string Serialize(const std::vector<Dataset>& sets) {
  std::string out;
  char buf[40];
  for (const auto& d : sets) {
    out += d.name + "\n";
    for (const auto* v : {&d.x, &d.y}) {
      for (double a : *v) {
        std::snprintf(buf, sizeof buf, "%.17g ", a);
        out += buf;
      }
      out += "\n";
    }
  }
  return out;
}

const char kScipyScript[] = R"(
import sys, warnings
import numpy as np
from scipy import stats
warnings.simplefilter("ignore")
lines = open(sys.argv[1]).read().split("\n")
for i in range(0, len(lines) - 2, 3):
    name = lines[i]
    x = np.array([float(v) for v in lines[i + 1].split()])
    y = np.array([float(v) for v in lines[i + 2].split()])
    p = stats.pearsonr(x, y)[0]
    pl = stats.pearsonr(np.log(x), np.log(y))[0] if (x > 0).all() and (y > 0).all() else float("nan")
    s = stats.spearmanr(x, y)[0]
    k = stats.kendalltau(x, y, variant="b")[0]
    print(name, repr(float(p)), repr(float(pl)), repr(float(s)), repr(float(k)))
)";

void CheckClose(double ours, double reference, const std::string& what) {
  INFO(what << ": ours " << ours << ", reference " << reference);
  CHECK(std::fabs(ours - reference) <= 1e-12 * std::fabs(reference) + 1e-15);
}

}  // namespace

TEST_CASE("coefficients match scipy.stats on tied and untied data", "[reports]") {
  PC_SKIP_IF(!pc::test::HavePython("scipy.stats, numpy"), "/usr/bin/python3 with scipy is absent");
  const std::vector<Dataset> sets = MakeDatasets();
  const std::string dir = pc::test::TempDir("scipy");
  pc::test::WriteText(dir + "/data.txt", Serialize(sets));
  std::istringstream out(pc::test::RunPythonScript(kScipyScript, "'" + dir + "/data.txt'"));

  size_t compared = 0, checked_na = 0;
  for (const auto& d : sets) {
    std::string name;
    std::string fields[4];
    REQUIRE(out >> name >> fields[0] >> fields[1] >> fields[2] >> fields[3]);
    REQUIRE(name == d.name);
    for (size_t k = 0; k < kAllCoefficients.size(); ++k) {
      const Stat ours = pc::reports::Correlation(kAllCoefficients[k], d.x, d.y);
      const double reference = std::strtod(fields[k].c_str(), nullptr);
      const std::string what = d.name + " " + pc::reports::CoefficientKey(kAllCoefficients[k]);
      if (std::isnan(reference)) {
        INFO(what << " is nan in scipy; ours: " << (ours.ok() ? "a number" : ours.detail));
        CHECK(!ours.ok());
        CHECK(ours.reason == pc::reports::kNotApplicable);
        ++checked_na;
      } else {
        INFO(what << ": " << ours.detail);
        REQUIRE(ours.ok());
        CheckClose(*ours.value, reference, what);
        ++compared;
      }
    }
  }
  CHECK(compared >= 150);   // 7 sizes x (5 positive sets x 4 + the signed set's 3 raw forms) = 161
  CHECK(checked_na >= 4);   // at least the constant set
}

TEST_CASE("kendall tau-b equals the pairwise definition", "[reports]") {
  for (const auto& d : MakeDatasets()) {
    const Stat tau = pc::reports::KendallTauB(d.x, d.y);
    if (!tau.ok()) continue;
    CheckClose(*tau.value, BruteKendall(d.x, d.y), d.name);
  }
  // Larger, heavily tied: the merge sort's inversion count against brute force.
  std::mt19937_64 rng(7);
  std::vector<double> x, y;
  for (int i = 0; i < 400; ++i) {
    x.push_back(pc::test::UniformInt(rng, 0, 9));
    y.push_back(pc::test::UniformInt(rng, 0, 6) + 0.3 * x.back());
  }
  CheckClose(*pc::reports::KendallTauB(x, y).value, BruteKendall(x, y), "n=400 tied");
}

TEST_CASE("coefficients: known answers", "[reports]") {
  // scipy.stats documentation examples.
  CHECK(*pc::reports::KendallTauB({12, 2, 1, 12, 2}, {1, 4, 7, 1, 0}).value == Approx(-0.47140452079103173).epsilon(1e-14));
  CHECK(*pc::reports::Spearman({1, 2, 3, 4, 5}, {5, 6, 7, 8, 7}).value == Approx(0.8207826816681233).epsilon(1e-14));
  CHECK(*pc::reports::Pearson({1, 2, 3, 4, 5}, {10, 9, 2.5, 6, 4}).value == Approx(-0.7426106572325057).epsilon(1e-14));
  // Monotone but not linear: rank coefficients are exactly ±1.
  const std::vector<double> x = {1, 2, 3, 4, 5, 6}, y = {1, 8, 27, 64, 125, 216}, rev = {6, 5, 4, 3, 2, 1};
  CHECK(*pc::reports::Spearman(x, y).value == 1.0);
  CHECK(*pc::reports::KendallTauB(x, y).value == 1.0);
  CHECK(*pc::reports::KendallTauB(x, rev).value == -1.0);
  CHECK(*pc::reports::PearsonLog(x, y).value == Approx(1.0).epsilon(1e-14));  // log y = 3 log x
  CHECK(*pc::reports::Pearson(x, y).value < 1.0);
  // Scale invariance and no overflow for huge values.
  std::vector<double> big, tiny;
  for (double v : x) big.push_back(v * 1e300);
  for (double v : y) tiny.push_back(v * 1e-300);
  CHECK(*pc::reports::Pearson(big, tiny).value == Approx(*pc::reports::Pearson(x, y).value).epsilon(1e-13));
}

TEST_CASE("coefficients: insufficient and n/a with reasons", "[reports]") {
  const std::vector<double> four = {1, 2, 3, 4}, five = {1, 2, 3, 4, 5}, constant = {3, 3, 3, 3, 3};
  for (Coefficient c : kAllCoefficients) {
    INFO(pc::reports::CoefficientKey(c));
    Stat s = pc::reports::Correlation(c, four, four);
    CHECK(!s.ok());
    CHECK(s.reason == "insufficient");
    CHECK_THAT(s.detail, Contains("4 observations, need at least 5"));

    s = pc::reports::Correlation(c, five, constant, {"perp_mean", "delta_nll"});
    CHECK(s.reason == "n/a");
    CHECK(s.detail == "delta_nll is constant");
    s = pc::reports::Correlation(c, constant, five);
    CHECK(s.detail == "x is constant");

    s = pc::reports::Correlation(c, {1, 2, NAN, 4, 5}, five);
    CHECK(s.reason == "n/a");
    CHECK_THAT(s.detail, Contains("x has a non-finite value (nan) at run 2"));

    CHECK_THROWS_WITH(pc::reports::Correlation(c, four, five, {"iso", "kl"}),
                      Contains("iso has 4 values but kl has 5"));
  }
  // Log form: any value <= 0 in either variable.
  Stat s = pc::reports::PearsonLog({1, 2, 0, 4, 5}, five);
  CHECK(s.reason == "n/a");
  CHECK_THAT(s.detail, Contains("x has a value <= 0 (0 at run 2)"));
  s = pc::reports::PearsonLog(five, {1, 2, 3, -4, 5});
  CHECK_THAT(s.detail, Contains("y has a value <= 0 (-4 at run 3)"));
  CHECK(pc::reports::Pearson({1, 2, 0, 4, 5}, five).ok());  // the raw form is fine
  // Insufficient is checked before n/a.
  CHECK(pc::reports::PearsonLog({0, 0, 0}, {1, 1, 1}).reason == "insufficient");
}

TEST_CASE("coefficient names and parsing", "[reports]") {
  for (Coefficient c : kAllCoefficients) {
    CHECK(pc::reports::ParseCoefficient(pc::reports::CoefficientKey(c), "--coefficient") == c);
  }
  CHECK(pc::reports::CoefficientTitle(Coefficient::kKendallTauB) == "Kendall \xcf\x84-b");
  CHECK_THROWS_WITH(pc::reports::ParseCoefficient("kendall", "--coefficient"),
                    Contains("--coefficient: unknown correlation coefficient 'kendall'") &&
                        Contains("supported: pearson, pearson_log, spearman, kendall_tau_b"));
}

TEST_CASE("orientation: a positive oriented coefficient means the predictor orders damage", "[reports]") {
  // Cosine falls as damage grows: its raw ρ with a loss delta is negative, its oriented ρ positive.
  const std::vector<double> loss = {0.1, 0.3, 0.2, 0.8, 0.5, 0.9};
  const std::vector<double> cosine = {0.99, 0.95, 0.97, 0.80, 0.90, 0.75};
  const double rho = *pc::reports::Spearman(cosine, loss).value;
  CHECK(rho == -1.0);
  CHECK(pc::reports::Oriented(rho, Orientation::kHigherIsBetter, Orientation::kHigherIsWorse) == 1.0);
  CHECK(pc::reports::Oriented(rho, Orientation::kHigherIsWorse, Orientation::kHigherIsWorse) == -1.0);
  // Against an accuracy (higher is better) the signs flip back.
  CHECK(pc::reports::Oriented(0.7, Orientation::kHigherIsWorse, Orientation::kHigherIsBetter) == -0.7);
  CHECK(pc::reports::Strength(-0.7, pc::reports::Compare::kAbsolute, Orientation::kHigherIsWorse,
                              Orientation::kHigherIsWorse) == 0.7);
  CHECK(pc::reports::Strength(-0.7, pc::reports::Compare::kOriented, Orientation::kHigherIsWorse,
                              Orientation::kHigherIsWorse) == -0.7);
}

TEST_CASE("ranks: average ranks for ties, damage order", "[reports]") {
  CHECK(pc::reports::AverageRanks({10, 20, 20, 5, 20}) == std::vector<double>{2, 4, 4, 1, 4});
  CHECK(pc::reports::AverageRanks({1, 1}) == std::vector<double>{1.5, 1.5});
  CHECK(pc::reports::AverageRanks({}).empty());
  CHECK(pc::reports::DamageRanks({0.9, 0.5, 0.7}, Orientation::kHigherIsBetter) == std::vector<double>{1, 3, 2});
  CHECK(pc::reports::DamageRanks({0.9, 0.5, 0.7}, Orientation::kHigherIsWorse) == std::vector<double>{3, 1, 2});
  CHECK(pc::reports::OrderByDamage({3, 1, 2, 1}, Orientation::kHigherIsWorse) == std::vector<size_t>{1, 3, 2, 0});
  CHECK(pc::reports::OrderByDamage({3, 1, 2, 1}, Orientation::kHigherIsBetter) == std::vector<size_t>{0, 2, 1, 3});
  CHECK_THROWS_WITH(pc::reports::AverageRanks({1, NAN}), Contains("value 1 is not finite"));
}

TEST_CASE("fitted line and quantiles", "[reports]") {
  auto line = pc::reports::FitLine({1, 2, 3, 4}, {3, 5, 7, 9});
  REQUIRE(line);
  CHECK(line->slope == Approx(2));
  CHECK(line->intercept == Approx(1));
  CHECK(line->At(10) == Approx(21));
  line = pc::reports::FitLine({1, 2, NAN, 3}, {1, 2, 100, 3});  // the NaN pair is ignored
  REQUIRE(line);
  CHECK(line->slope == Approx(1));
  CHECK(!pc::reports::FitLine({2, 2, 2}, {1, 2, 3}));
  CHECK(!pc::reports::FitLine({1}, {1}));
  CHECK_THROWS_WITH(pc::reports::FitLine({1, 2}, {1}), Contains("2 x values but 1 y values"));

  const std::vector<double> s = {1, 2, 3, 4};
  CHECK(pc::reports::QuantileSorted(s, 0) == 1);
  CHECK(pc::reports::QuantileSorted(s, 1) == 4);
  CHECK(pc::reports::QuantileSorted(s, 0.25) == 1.75);  // numpy.percentile(s, 25)
  CHECK(pc::reports::QuantileSorted({5}, 0.975) == 5);
}
