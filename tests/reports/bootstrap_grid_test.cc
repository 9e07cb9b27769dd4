// BootstrapCorrelationGrid equals BootstrapCorrelations pair by pair, bit for bit, on tied, untied, constant,
// non-positive and non-finite data, below and above the sign-table limit of Kendall's τ-b, for any thread count.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "reports/bootstrap_grid.h"
#include "tests/reports/reports_test_support.h"

using pc::reports::BootstrapInterval;
using pc::reports::BootstrapOptions;

namespace {

struct Data {
  std::vector<std::vector<double>> xs, ys;
  std::vector<std::string> x_names, y_names;
};

// Variables of every kind the grid must treat like the library.
Data MakeData(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Data d;
  auto add = [&](std::vector<std::vector<double>>& vs, std::vector<std::string>& names, const std::string& name,
                 auto gen) {
    std::vector<double> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = gen(i);
    vs.push_back(v);
    names.push_back(name);
  };
  add(d.xs, d.x_names, "positive", [&](size_t) { return 0.01 + pc::test::Uniform(rng); });
  add(d.xs, d.x_names, "ties", [&](size_t) { return double(pc::test::UniformInt(rng, 0, 3)); });  // zeros: no log
  add(d.xs, d.x_names, "signed", [&](size_t) { return pc::test::Uniform(rng) - 0.5; });
  add(d.xs, d.x_names, "constant", [&](size_t) { return 2.0; });
  add(d.xs, d.x_names, "nearly constant", [&](size_t i) { return i == 0 ? 1.0 : 3.0; });  // constant in many resamples
  add(d.xs, d.x_names, "nan", [&](size_t i) { return i == 1 ? std::nan("") : double(i); });
  add(d.xs, d.x_names, "huge", [&](size_t) { return 1e300 * (1 + pc::test::Uniform(rng)); });
  add(d.ys, d.y_names, "loss", [&](size_t i) { return d.xs[0][i] * 2 + 0.3 * pc::test::Uniform(rng); });
  add(d.ys, d.y_names, "tied loss", [&](size_t) { return double(pc::test::UniformInt(rng, 1, 4)); });
  add(d.ys, d.y_names, "negative", [&](size_t) { return -pc::test::Uniform(rng); });
  return d;
}

void RequireSame(const BootstrapInterval& a, const BootstrapInterval& b) {
  REQUIRE(a.estimate.ok() == b.estimate.ok());
  if (a.estimate.ok()) REQUIRE(*a.estimate.value == *b.estimate.value);
  REQUIRE(a.estimate.reason == b.estimate.reason);
  REQUIRE(a.estimate.detail == b.estimate.detail);
  REQUIRE(a.lo.has_value() == b.lo.has_value());
  if (a.lo) {
    REQUIRE(*a.lo == *b.lo);
    REQUIRE(*a.hi == *b.hi);
  }
  REQUIRE(a.used == b.used);
  REQUIRE(a.dropped == b.dropped);
  REQUIRE(a.resamples == b.resamples);
  REQUIRE(a.seed == b.seed);
  REQUIRE(a.detail == b.detail);
}

void CompareWithLibrary(size_t n, int resamples, int threads, uint64_t seed) {
  const Data d = MakeData(n, seed);
  BootstrapOptions o;
  o.resamples = resamples;
  o.seed = seed;
  const auto grid = pc::reports::BootstrapCorrelationGrid(d.xs, d.x_names, d.ys, d.y_names, o, threads);
  REQUIRE(grid.size() == d.xs.size());
  for (size_t i = 0; i < d.xs.size(); ++i) {
    for (size_t j = 0; j < d.ys.size(); ++j) {
      const auto lib = pc::reports::BootstrapCorrelations(d.xs[i], d.ys[j], o, {d.x_names[i], d.y_names[j]});
      for (size_t c = 0; c < lib.size(); ++c) {
        INFO("n " << n << ", x " << d.x_names[i] << ", y " << d.y_names[j] << ", coefficient " << c);
        RequireSame(grid[i][j][c], lib[c]);
      }
    }
  }
}

}  // namespace

TEST_CASE("bootstrap grid equals the library's bootstrap, pair by pair", "[reports][bootstrap]") {
  CompareWithLibrary(24, 300, 1, 7);
  CompareWithLibrary(9, 300, 2, 3);   // small n: many resamples with a constant variable
  CompareWithLibrary(4, 100, 1, 1);   // insufficient: no resampling
  CompareWithLibrary(5, 200, 2, 11);  // the minimum
}

TEST_CASE("bootstrap grid: Kendall by merging above the sign-table limit", "[reports][bootstrap]") {
  CompareWithLibrary(300, 20, 2, 5);
}

TEST_CASE("bootstrap grid: results do not depend on the thread count", "[reports][bootstrap]") {
  Data d = MakeData(20, 9);
  for (int k = 0; k < 40; ++k) {  // more x variables than one block
    d.xs.push_back(d.xs[size_t(k) % 3]);
    d.x_names.push_back("copy " + std::to_string(k));
  }
  BootstrapOptions o;
  o.resamples = 100;
  const auto one = pc::reports::BootstrapCorrelationGrid(d.xs, d.x_names, d.ys, d.y_names, o, 1);
  const auto three = pc::reports::BootstrapCorrelationGrid(d.xs, d.x_names, d.ys, d.y_names, o, 3);
  for (size_t i = 0; i < one.size(); ++i) {
    for (size_t j = 0; j < one[i].size(); ++j) {
      for (size_t c = 0; c < one[i][j].size(); ++c) RequireSame(one[i][j][c], three[i][j][c]);
    }
  }
}

TEST_CASE("bootstrap grid: errors name the variable", "[reports][bootstrap]") {
  using Catch::Matchers::Contains;
  BootstrapOptions o;
  CHECK_THROWS_WITH(pc::reports::BootstrapCorrelationGrid({{1, 2, 3}, {1, 2}}, {"a", "b"}, {{1, 2, 3}}, {"y"}, o),
                    Contains("b has 2 values, expected 3"));
  o.resamples = 0;
  CHECK_THROWS_WITH(pc::reports::BootstrapCorrelationGrid({{1, 2, 3}}, {"a"}, {{1, 2, 3}}, {"y"}, o),
                    Contains("resamples must be >= 1"));
}
