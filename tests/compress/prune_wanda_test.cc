// Magnitude, Wanda and Wanda-⊥: masks against brute-force rankings, exact sparsity, N:M groups,
// Wanda = magnitude under equal activations, Wanda-⊥'s statistics, and whole models through the engine.
#include <catch2/catch.hpp>

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "compress/engine.h"
#include "compress/sparsity.h"
#include "model/model.h"
#include "tests/compress/prune_test_util.h"
#include "tests/model/model_test_util.h"
#include "tests/test_support.h"

using pc::ParamScalar;
using pc::test::Compress;
using pc::test::MakeMethod;
using Params = std::map<std::string, ParamScalar>;

namespace {

// Per row, the k columns with the smallest score by std::stable_sort (ties: lower column).
at::Tensor BruteForceMask(const at::Tensor& score, int64_t k) {
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

// Every N:M window of every row of w has at least n zeros; the tail is untouched where w0 had no zeros.
void CheckNm(const at::Tensor& w, int64_t n, int64_t m) {
  const int64_t windows = w.size(1) / m;
  at::Tensor zeros = (w.narrow(1, 0, windows * m) == 0).reshape({w.size(0), windows, m}).sum(-1);
  CHECK((zeros >= n).all().item<bool>());
}

}  // namespace

TEST_CASE("wanda: the mask equals a brute-force ranking of |W|·‖X‖ on a small case", "[compress][prune]") {
  // Small integers make ties in the score (equal |W| and equal column norms).
  at::Generator gen = at::detail::createCPUGenerator(3);
  at::Tensor w = (at::randint(-3, 4, {6, 12}, gen)).to(at::kFloat);
  at::Tensor x = at::randint(-2, 3, {20, 12}, gen).to(at::kFloat);
  x.select(1, 5).zero_();  // a dead input column: score 0, pruned first
  at::Tensor score = w.abs().to(at::kDouble) * x.to(at::kDouble).square().sum(0).sqrt().unsqueeze(0);
  for (double ratio : {0.25, 0.5, 0.7}) {
    auto wanda = MakeMethod("wanda", {{"sparsity", ratio}});
    pc::Record rec;
    at::Tensor got = Compress(*wanda, w, x, &rec);
    const int64_t k = static_cast<int64_t>(std::floor(ratio * 12));
    at::Tensor expected = w.masked_fill(BruteForceMask(score, k), 0);
    CHECK(got.equal(expected));
    CHECK(rec.values.at("pruned") == 6 * k);
    CHECK(rec.values.at("target_sparsity") == ratio);
  }
  // N:M: the N smallest scores of every window, brute force per window.
  auto nm = MakeMethod("wanda", {{"sparsity", 0.5}, {"pattern", std::string("2:4")}});
  at::Tensor got = Compress(*nm, w, x);
  for (int64_t win = 0; win < 3; ++win) {
    at::Tensor expected = BruteForceMask(score.narrow(1, 4 * win, 4), 2);
    CHECK(got.narrow(1, 4 * win, 4).equal(w.narrow(1, 4 * win, 4).masked_fill(expected, 0)));
  }
}

TEST_CASE("wanda: with all activations equal it is magnitude pruning", "[compress][prune]") {
  at::Tensor w = pc::test::RandomWeight(16, 40, 5);
  w.narrow(1, 0, 10).copy_(w.narrow(1, 10, 10));  // equal magnitudes within rows: ties
  at::Tensor x = at::full({9, 40}, 0.7f);
  for (const char* pattern : {"unstructured", "2:4", "4:8"}) {
    Params p{{"sparsity", 0.5}, {"pattern", std::string(pattern)}};
    auto wanda = MakeMethod("wanda", p);
    auto magnitude = MakeMethod("magnitude", p);
    CHECK(Compress(*wanda, w, x).equal(Compress(*magnitude, w, x)));
    CHECK(Compress(*wanda, w, x).equal(wanda->NaiveWeight(w)));
  }
}

TEST_CASE("pruners: exact per-row sparsity, layer-wide count and N:M windows", "[compress][prune]") {
  at::Tensor x = pc::test::SyntheticInputs(64, 75, 1);
  at::Tensor w = pc::test::RandomWeight(33, 75, 2);
  for (const char* method : {"magnitude", "wanda", "wanda-perp", "sparsegpt"}) {
    for (double ratio : {0.0, 0.3, 0.5, 0.7}) {
      INFO(method << " " << ratio);
      auto m = MakeMethod(method, {{"sparsity", ratio}});
      at::Tensor got = Compress(*m, w, x);
      const int64_t per_row = static_cast<int64_t>(std::floor(ratio * 75));
      if (std::string(method) == "sparsegpt") {  // per column block: 75 columns = one block of 128
        CHECK((got == 0).sum().item<int64_t>() == static_cast<int64_t>(std::floor(ratio * 33 * 75)));
      } else {
        CHECK(((got == 0).sum(1) == per_row).all().item<bool>());
      }
    }
    for (auto [n, mm] : std::vector<std::pair<int64_t, int64_t>>{{2, 4}, {4, 8}, {1, 3}, {3, 7}}) {
      INFO(method << " " << n << ":" << mm);
      auto m = MakeMethod(method, {{"sparsity", static_cast<double>(n) / mm},
                                   {"pattern", std::to_string(n) + ":" + std::to_string(mm)}});
      pc::Record rec;
      at::Tensor got = Compress(*m, w, x, &rec);
      CheckNm(got, n, mm);
      const int64_t tail = 75 % mm;
      CHECK(rec.values.at("nm_tail_columns") == tail);
      CHECK((got == 0).sum().item<int64_t>() == 33 * (75 / mm) * n);  // exactly N per window
      if (tail > 0) CHECK(got.narrow(1, 75 - tail, tail).ne(0).all().item<bool>());
    }
  }
  auto layer = MakeMethod("magnitude", {{"sparsity", 0.37}, {"scope", std::string("layer")}});
  at::Tensor got = Compress(*layer, w, x);
  CHECK((got == 0).sum().item<int64_t>() == static_cast<int64_t>(std::floor(0.37 * 33 * 75)));
  // The kept weights are the largest: every kept |w| >= every pruned |w|.
  CHECK(w.abs().masked_select(got != 0).min().item<float>() >= w.abs().masked_select(got == 0).max().item<float>());
}

TEST_CASE("wanda-perp: statistics and score match a per-token brute force, lambda 1/1 is Wanda", "[compress][prune]") {
  at::Tensor x = pc::test::SyntheticInputs(30, 10, 3);
  at::Tensor w = pc::test::RandomWeight(4, 10, 4);
  at::Tensor y = at::mm(x, w.t());  // (30, 4)
  y[3].zero_();                     // a token with y = 0: no direction, all perpendicular
  x[3].zero_();
  auto perp = MakeMethod("wanda-perp", {{"sparsity", 0.5}, {"lambda_par", 0.1}, {"lambda_perp", 1.0}});
  pc::Linear lin = pc::test::MakeLinear(w);
  pc::InputStats stats = pc::test::StatsOf(x);
  perp->Accumulate(lin, x.narrow(0, 0, 17), y.narrow(0, 0, 17), stats);  // two micro-batches
  perp->Accumulate(lin, x.narrow(0, 17, 13), y.narrow(0, 17, 13), stats);
  REQUIRE(stats.extra.size() == 1);
  at::Tensor par = stats.extra.begin()->second;  // (in, out)
  // Brute force in float64: Σ_t x_tj² u_ti².
  at::Tensor xd = x.to(at::kDouble), yd = y.to(at::kDouble);
  at::Tensor expected = at::zeros({10, 4}, at::kDouble);
  for (int64_t t = 0; t < 30; ++t) {
    double n2 = yd[t].square().sum().item<double>();
    if (n2 == 0) continue;
    expected += at::outer(xd[t].square(), yd[t].square() / n2);
  }
  CHECK(at::allclose(par, expected, 1e-5, 1e-9));
  // Score |w| sqrt(λ⊥ (S − P) + λ∥ P) ranked per row.
  at::Tensor s = xd.square().sum(0).unsqueeze(0);
  at::Tensor score = w.to(at::kDouble).abs() * (1.0 * (s - expected.t()) + 0.1 * expected.t()).clamp_min(0).sqrt();
  pc::Record rec;
  perp->CompressLinear(lin, stats, rec);
  CHECK(lin.weight.equal(w.masked_fill(BruteForceMask(score, 5), 0)));
  CHECK(rec.values.at("par_energy_share") > 0);
  CHECK(rec.values.at("par_energy_share") < 1);
  // λ∥ = λ⊥ = 1: exactly Wanda, on a larger case.
  at::Tensor x2 = pc::test::SyntheticInputs(50, 64, 5), w2 = pc::test::RandomWeight(24, 64, 6);
  for (const char* pattern : {"unstructured", "2:4"}) {
    Params p{{"sparsity", 0.5}, {"pattern", std::string(pattern)}};
    Params pp = p;
    pp["lambda_par"] = 1.0;
    pp["lambda_perp"] = 1.0;
    CHECK(Compress(*MakeMethod("wanda-perp", pp), w2, x2).equal(Compress(*MakeMethod("wanda", p), w2, x2)));
  }
  // The default differs from Wanda (it uses the output directions).
  CHECK_FALSE(Compress(*MakeMethod("wanda-perp", {{"sparsity", 0.5}}), w2, x2)
                  .equal(Compress(*MakeMethod("wanda", {{"sparsity", 0.5}}), w2, x2)));
}

TEST_CASE("pruners through the engine: exact sparsity on every linear of reference models", "[compress][prune]") {
  PC_SKIP_IF(!pc::test::HavePythonTorch(), "/usr/bin/python3 with torch is absent");
  for (const char* arch : {"llama", "gpt_neox", "opt"}) {
    std::string dir = pc::test::MakeReferenceModel(arch);
    struct Case {
      const char* method;
      Params params;
    };
    const std::vector<Case> cases = {
        {"magnitude", {{"sparsity", 0.5}}},
        {"wanda", {{"sparsity", 0.3}}},
        {"wanda", {{"sparsity", 0.5}, {"pattern", std::string("2:4")}}},
        {"wanda-perp", {{"sparsity", 0.7}}},
        {"wanda-perp", {{"sparsity", 0.5}, {"pattern", std::string("4:8")}}},
        {"sparsegpt", {{"sparsity", 0.5}, {"block_size", int64_t{16}}}},
        {"sparsegpt", {{"sparsity", 1.0 / 3.0}, {"pattern", std::string("1:3")}}},
    };
    for (const Case& c : cases) {
      INFO(arch << " " << c.method << " " << MakeMethod(c.method, c.params)->Describe());
      auto model = pc::Model::Load(dir);
      pc::test::CompressedModel cm = pc::test::CompressModel(*model, c.method, c.params);
      const double ratio = std::get<double>(c.params.at("sparsity"));
      const bool nm = c.params.count("pattern") > 0;
      int checked = 0;
      {
        for (const auto& [name, weight] : cm.weights) {
          INFO(name);
          at::Tensor z = weight == 0;
          const int64_t out = weight.size(0), in = weight.size(1);
          REQUIRE(at::isfinite(weight).all().item<bool>());
          if (nm) {
            pc::SparsityPattern p = pc::ParseSparsityPattern(ratio, std::get<std::string>(c.params.at("pattern")), "t");
            CheckNm(weight, p.n, p.m);
            CHECK(z.sum().item<int64_t>() == out * (in / p.m) * p.n);
          } else if (std::string(c.method) == "sparsegpt") {
            for (int64_t c0 = 0; c0 < in; c0 += 16) {
              const int64_t len = std::min<int64_t>(16, in - c0);
              CHECK(z.narrow(1, c0, len).sum().item<int64_t>() ==
                    static_cast<int64_t>(std::floor(ratio * static_cast<double>(out * len))));
            }
          } else {
            CHECK((z.sum(1) == static_cast<int64_t>(std::floor(ratio * in))).all().item<bool>());
          }
          ++checked;
        }
      }
      CHECK(checked == model->num_layers() * static_cast<int>(model->arch().linears.size()));
      for (const auto& rec : cm.result.records) {
        if (rec.kind != "linear") continue;
        CHECK(rec.values.count("err_after"));
        CHECK(rec.values.count("err_before"));
        CHECK(std::isfinite(rec.values.at("err_after")));
      }
    }
  }
}
