// Pruning masks and patterns (compress/sparsity.h): exact counts, stable tie-breaking against a
// brute-force ranking, N:M windows and tails, and the parameter errors of every pruner and GPTQ.
#include <catch2/catch.hpp>

#include <ATen/ATen.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "compress/sparsity.h"
#include "core/error.h"
#include "tests/compress/prune_test_util.h"

using Catch::Matchers::Contains;

namespace {

// Brute force: per row, stable-sort the columns by score and prune the first k.
at::Tensor BruteForcePerRow(const at::Tensor& score, int64_t k) {
  at::Tensor s = score.to(at::kDouble).contiguous();
  at::Tensor mask = at::zeros(score.sizes(), at::kBool);
  for (int64_t r = 0; r < s.size(0); ++r) {
    std::vector<int64_t> idx(s.size(1));
    std::iota(idx.begin(), idx.end(), 0);
    const double* row = s[r].data_ptr<double>();
    std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return row[a] < row[b]; });
    for (int64_t j = 0; j < k; ++j) mask[r][idx[j]] = true;
  }
  return mask;
}

// Integer-valued scores with many ties.
at::Tensor TiedScores(int64_t rows, int64_t cols, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  return at::randint(0, 4, {rows, cols}, gen).to(at::kFloat);
}

}  // namespace

TEST_CASE("sparsity: k smallest per row equals a stable-sort ranking, ties to the lower column", "[compress][prune]") {
  for (uint64_t seed : {1, 2, 3}) {
    at::Tensor s = TiedScores(7, 13, seed);
    for (int64_t k : {0, 1, 4, 6, 12, 13}) {
      INFO("seed " << seed << " k " << k);
      at::Tensor m = pc::KSmallestPerRow(s, k);
      CHECK(m.equal(BruteForcePerRow(s, k)));
      CHECK((m.sum(1) == k).all().item<bool>());
    }
  }
  // Continuous scores (no ties) in float64.
  at::Tensor s = at::rand({5, 31}, at::kDouble);
  CHECK(pc::KSmallestPerRow(s, 15).equal(BruteForcePerRow(s, 15)));
}

TEST_CASE("sparsity: k smallest overall ranks in row-major order", "[compress][prune]") {
  at::Tensor s = TiedScores(6, 9, 4);
  for (int64_t k : {0, 5, 27, 53, 54}) {
    at::Tensor m = pc::KSmallestOverall(s, k);
    CHECK(m.equal(BruteForcePerRow(s.reshape({1, -1}), k).reshape(s.sizes())));
    CHECK(m.sum().item<int64_t>() == k);
  }
}

TEST_CASE("sparsity: N:M masks prune N of every M consecutive columns and leave the tail dense", "[compress][prune]") {
  for (auto [n, m] : std::vector<std::pair<int64_t, int64_t>>{{2, 4}, {4, 8}, {1, 3}, {2, 5}}) {
    at::Tensor s = TiedScores(5, 23, 7);
    at::Tensor mask = pc::NmMask(s, n, m);
    const int64_t windows = 23 / m;
    for (int64_t w = 0; w < windows; ++w) {
      at::Tensor win = s.narrow(1, w * m, m);
      CHECK(mask.narrow(1, w * m, m).equal(BruteForcePerRow(win, n)));
    }
    CHECK_FALSE(mask.narrow(1, windows * m, 23 - windows * m).any().item<bool>());
    CHECK(mask.sum().item<int64_t>() == 5 * windows * n);
  }
}

TEST_CASE("sparsity: patterns parse, and bad ones are refused with the recipe line", "[compress][prune]") {
  pc::SparsityPattern p = pc::ParseSparsityPattern(0.5, "2:4", "r.yaml:3");
  CHECK(p.nm());
  CHECK(p.n == 2);
  CHECK(p.m == 4);
  CHECK(p.ratio == 0.5);
  CHECK(pc::ParseSparsityPattern(0.3, "unstructured", "w").ratio == 0.3);
  CHECK(pc::ParseSparsityPattern(1.0 / 3.0, "1:3", "w").m == 3);
  CHECK_THROWS_WITH(pc::ParseSparsityPattern(0.5, "2:x", "r.yaml:3"),
                    Contains("r.yaml:3: 'pattern' = '2:x' is not understood; expected 'unstructured' or 'N:M'"));
  CHECK_THROWS_WITH(pc::ParseSparsityPattern(0.5, "2:4:8", "r.yaml:3"), Contains("'2:4:8' is not understood"));
  CHECK_THROWS_WITH(pc::ParseSparsityPattern(0.5, "-2:4", "r.yaml:3"), Contains("is not understood"));
  CHECK_THROWS_WITH(pc::ParseSparsityPattern(0.5, "Unstructured", "r.yaml:3"), Contains("is not understood"));
  CHECK_THROWS_WITH(pc::ParseSparsityPattern(1.0, "4:4", "r.yaml:3"),
                    Contains("r.yaml:3: 'sparsity' = 1 must lie in [0, 1)"));
  CHECK_THROWS_WITH(pc::ParseSparsityPattern(0.5, "4:4", "r.yaml:3"),
                    Contains("r.yaml:3: 'pattern' = '4:4' needs 1 <= N < M"));
  CHECK_THROWS_WITH(pc::ParseSparsityPattern(0.5, "4:2", "r.yaml:3"), Contains("got N = 4, M = 2"));
  CHECK_THROWS_WITH(pc::ParseSparsityPattern(0.5, "0:4", "r.yaml:3"), Contains("needs 1 <= N < M"));
  CHECK_THROWS_WITH(pc::ParseSparsityPattern(0.5, "1:4", "r.yaml:3"),
                    Contains("r.yaml:3: 'pattern' = '1:4' prunes N/M = 0.25 of the weights but 'sparsity' = 0.5; set "
                             "'sparsity: 0.25'"));
  CHECK_THROWS_WITH(pc::ParseSparsityPattern(-0.1, "unstructured", "r.yaml:3"), Contains("must lie in [0, 1)"));
}

TEST_CASE("pruners and GPTQ: parameter errors name the recipe line", "[compress][prune]") {
  using pc::test::MakeMethod;
  CHECK_THROWS_WITH(MakeMethod("wanda", {{"sparsity", 1.0}}), Contains("r.yaml:3: 'sparsity' = 1 must lie in [0, 1)"));
  CHECK_THROWS_WITH(MakeMethod("wanda", {{"sparsity", 1.5}}), Contains("'sparsity' = 1.5 is out of range (0..1)"));
  CHECK_THROWS_WITH(MakeMethod("wanda", {{"sparsity", -0.5}}), Contains("is out of range"));
  CHECK_THROWS_WITH(MakeMethod("wanda", {{"pattern", std::string("2:x")}}), Contains("r.yaml:3: 'pattern' = '2:x'"));
  CHECK_THROWS_WITH(MakeMethod("sparsegpt", {{"pattern", std::string("4:8")}, {"sparsity", 0.6}}),
                    Contains("prunes N/M = 0.5 of the weights but 'sparsity' = 0.6"));
  CHECK_THROWS_WITH(MakeMethod("magnitude", {{"scope", std::string("layer")}, {"pattern", std::string("2:4")}}),
                    Contains("r.yaml:3: scope 'layer' ranks all weights of a layer together and cannot be combined "
                             "with the N:M pattern '2:4'"));
  CHECK_THROWS_WITH(MakeMethod("magnitude", {{"scope", std::string("column")}}), Contains("one of: row, layer"));
  CHECK_THROWS_WITH(MakeMethod("wanda-perp", {{"lambda_par", 0.0}, {"lambda_perp", 0.0}}),
                    Contains("r.yaml:3: 'lambda_par' and 'lambda_perp' are both 0"));
  CHECK_THROWS_WITH(MakeMethod("gptq", {{"group_size", int64_t{-1}}, {"static_groups", true}}),
                    Contains("r.yaml:3: 'static_groups: true' needs groups, but 'group_size' is -1"));
  CHECK_THROWS_WITH(MakeMethod("gptq", {{"bits", int64_t{1}}}), Contains("'bits' = 1 is out of range (2..8)"));
  CHECK_THROWS_WITH(MakeMethod("sparsegpt", {{"bits", int64_t{1}}}),
                    Contains("'bits' = 1 is out of range (2..8 or 0)"));
  CHECK_THROWS_WITH(MakeMethod("sparsegpt", {{"damp", -0.01}}), Contains("'damp' = -0.01 is out of range"));
  // Valid combinations construct.
  CHECK(MakeMethod("gptq", {{"act_order", true}, {"static_groups", true}}) != nullptr);
  CHECK(MakeMethod("sparsegpt", {{"pattern", std::string("2:4")}, {"bits", int64_t{4}}}) != nullptr);
  CHECK(MakeMethod("wanda", {{"pattern", std::string("1:3")}, {"sparsity", 1.0 / 3.0}}) != nullptr);
}
