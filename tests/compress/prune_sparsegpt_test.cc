// SparseGPT: exact block sparsity, N:M, joint quantization, reconstruction error against magnitude
// pruning, singular / dead-column Hessians, parity with the reference algorithm (obs_reference.py).
#include <catch2/catch.hpp>

#include <ATen/ATen.h>

#include <cmath>

#include "compress/hessian.h"
#include "compress/quantizer.h"
#include "compress/sparsity.h"
#include "core/tensor_util.h"
#include "tests/compress/prune_test_util.h"
#include "tests/model/model_test_util.h"
#include "tests/test_support.h"

using pc::ParamScalar;
using pc::test::Compress;
using pc::test::MakeMethod;
using pc::test::OutputRelError;
using Params = std::map<std::string, ParamScalar>;

TEST_CASE("sparsegpt: exactly floor(ratio x size) zeros in every column block", "[compress][prune]") {
  at::Tensor x = pc::test::SyntheticInputs(200, 100, 11);
  at::Tensor w = pc::test::RandomWeight(24, 100, 12);
  for (double ratio : {0.3, 0.5, 0.8}) {
    pc::Record rec;
    at::Tensor got = Compress(*MakeMethod("sparsegpt", {{"sparsity", ratio}, {"block_size", int64_t{32}}}), w, x, &rec);
    int64_t total = 0;
    for (int64_t c0 = 0; c0 < 100; c0 += 32) {
      const int64_t len = std::min<int64_t>(32, 100 - c0);
      const int64_t k = static_cast<int64_t>(std::floor(ratio * 24 * len));
      CHECK((got.narrow(1, c0, len) == 0).sum().item<int64_t>() == k);
      total += k;
    }
    CHECK(rec.values.at("pruned") == total);
    CHECK(rec.values.at("block_columns") == 32);
  }
}

TEST_CASE("sparsegpt: reconstruction error below magnitude pruning's at the same sparsity", "[compress][prune]") {
  for (uint64_t seed : {1, 2, 3}) {
    at::Tensor x = pc::test::SyntheticInputs(256, 96, seed);
    at::Tensor w = pc::test::RandomWeight(40, 96, seed + 10);
    for (Params p : {Params{{"sparsity", 0.5}}, Params{{"sparsity", 0.7}},
                     Params{{"sparsity", 0.5}, {"pattern", std::string("2:4")}},
                     Params{{"sparsity", 0.5}, {"pattern", std::string("4:8")}},
                     Params{{"sparsity", 0.5}, {"bits", int64_t{4}}, {"group_size", int64_t{32}}},
                     Params{{"sparsity", 0.5}, {"pattern", std::string("2:4")}, {"bits", int64_t{3}}}}) {
      auto sg = MakeMethod("sparsegpt", p);
      INFO("seed " << seed << " " << sg->Describe());
      const double err = OutputRelError(x, w, Compress(*sg, w, x));
      const double naive = OutputRelError(x, w, sg->NaiveWeight(w));
      Params mp{{"sparsity", p.at("sparsity")}};
      if (p.count("pattern")) mp["pattern"] = p.at("pattern");
      const double wanda = OutputRelError(x, w, Compress(*MakeMethod("wanda", mp), w, x));
      CHECK(err < naive);
      if (!p.count("bits")) CHECK(err < wanda);
      CHECK(std::isfinite(err));
    }
  }
}

TEST_CASE("sparsegpt: joint quantization keeps the mask and puts the rest on the group grid", "[compress][prune]") {
  at::Tensor x = pc::test::SyntheticInputs(128, 64, 4);
  at::Tensor w = pc::test::RandomWeight(16, 64, 5);
  pc::Record rec;
  at::Tensor got = Compress(
      *MakeMethod("sparsegpt", {{"sparsity", 0.5}, {"bits", int64_t{4}}, {"group_size", int64_t{16}}}), w, x, &rec);
  CHECK((got == 0).sum().item<int64_t>() >= 16 * 32);
  CHECK(rec.values.at("bits") == 4);
  // Every group of 16 columns holds at most 2^4 distinct values per row (0 among them).
  for (int64_t r = 0; r < 16; ++r) {
    for (int64_t g = 0; g < 4; ++g) {
      CHECK(std::get<0>(at::_unique(got[r].narrow(0, 16 * g, 16))).numel() <= 16);
    }
  }
}

TEST_CASE("sparsegpt and gptq: singular Hessians and dead inputs never give NaN", "[compress][prune]") {
  at::Tensor x = pc::test::SyntheticInputs(40, 32, 6);
  x.select(1, 3).zero_();                        // dead input column
  x.select(1, 8).copy_(x.select(1, 9));          // duplicated column: singular Gram
  x.narrow(0, 0, 40).select(1, 20).mul_(1e-20);  // a nearly dead column
  at::Tensor w = pc::test::RandomWeight(12, 32, 7);
  for (const char* method : {"sparsegpt", "gptq"}) {
    for (double damp : {0.0, 0.01}) {
      INFO(method << " damp " << damp);
      pc::Record rec;
      at::Tensor got = Compress(*MakeMethod(method, {{"damp", damp}, {"group_size", int64_t{8}}}), w, x, &rec);
      CHECK(at::isfinite(got).all().item<bool>());
      CHECK(rec.values.at("dead_columns") == 1);
      CHECK(rec.values.at("damp_used") >= damp);
    }
  }
  // An exactly singular Gram (two equal columns, the others dead) with damp 0: the Cholesky
  // factorisation fails and is retried with more damping.
  at::Tensor xs = at::zeros({2, 32});
  xs[0][0] = 2;
  xs[0][1] = 2;
  for (const char* method : {"sparsegpt", "gptq"}) {
    pc::Record rec;
    at::Tensor got = Compress(*MakeMethod(method, {{"damp", 0.0}}), w, xs, &rec);
    CHECK(at::isfinite(got).all().item<bool>());
    CHECK(rec.values.at("cholesky_retries") >= 1);
    CHECK(rec.values.at("damp_used") > 0);
  }
  // All inputs zero: every column dead, H = I.
  at::Tensor zero = at::zeros({10, 32});
  for (const char* method : {"sparsegpt", "gptq"}) {
    pc::Record rec;
    at::Tensor got = Compress(*MakeMethod(method, {}), w, zero, &rec);
    CHECK(at::isfinite(got).all().item<bool>());
    CHECK(rec.values.at("dead_columns") == 32);
  }
  // Dead columns: SparseGPT prunes them first (saliency 0), but only up to the exact count.
  at::Tensor xd = pc::test::SyntheticInputs(60, 16, 8);
  xd.narrow(1, 0, 12).zero_();  // 12 of 16 columns dead: 75% of the weights have saliency 0
  at::Tensor got = Compress(*MakeMethod("sparsegpt", {{"sparsity", 0.5}}), w.narrow(1, 0, 16), xd);
  CHECK((got == 0).sum().item<int64_t>() == 12 * 8);
  CHECK((got.narrow(1, 12, 4) != 0).all().item<bool>());  // live columns kept
}

TEST_CASE("hessian: damping retries and aligned blocks", "[compress][prune]") {
  at::Tensor h = at::ones({4, 4}, at::kDouble);  // rank 1
  pc::InverseFactor f = pc::InverseUpperFactor(h, 0.0, "test");
  CHECK(f.retries >= 1);
  CHECK(at::isfinite(f.upper).all().item<bool>());
  // UᵀU = (H + damping)⁻¹
  at::Tensor damped = h + f.damp_used * at::eye(4, at::kDouble);
  at::Tensor u = f.upper.to(at::kDouble);
  CHECK(at::allclose(at::mm(u.t(), u), at::inverse(damped), 1e-4, 1e-6));
  CHECK(pc::AlignedBlock(128, 1) == 128);
  CHECK(pc::AlignedBlock(128, 48) == 96);
  CHECK(pc::AlignedBlock(128, 300) == 300);
  CHECK(pc::AlignedBlock(128, 4) == 128);
}

TEST_CASE("sparsegpt: parity with the reference algorithm (obs_reference.py)", "[compress][prune]") {
  PC_SKIP_IF(!pc::test::HavePythonTorch(), "/usr/bin/python3 with torch is absent");
  at::Tensor x = pc::test::SyntheticInputs(300, 72, 21);
  at::Tensor w = pc::test::RandomWeight(20, 72, 22);
  struct Case {
    Params ours;
    nlohmann::json ref;
  };
  const std::vector<Case> cases = {
      {{{"sparsity", 0.5}, {"block_size", int64_t{32}}},
       {{"sparsity", 0.5}, {"n", 0}, {"m", 0}, {"block_size", 32}, {"bits", 0}, {"zero_point", true}, {"damp", 0.01}}},
      {{{"sparsity", 0.5}, {"pattern", std::string("2:4")}},
       {{"sparsity", 0.5}, {"n", 2}, {"m", 4}, {"block_size", 128}, {"bits", 0}, {"zero_point", true}, {"damp", 0.01}}},
      {{{"sparsity", 0.6}, {"bits", int64_t{4}}, {"group_size", int64_t{-1}}, {"damp", 0.05}},
       {{"sparsity", 0.6}, {"n", 0}, {"m", 0}, {"block_size", 128}, {"bits", 4}, {"zero_point", true}, {"damp", 0.05}}},
  };
  for (const Case& c : cases) {
    auto sg = MakeMethod("sparsegpt", c.ours);
    INFO(sg->Describe());
    pc::Record rec;
    at::Tensor ours = Compress(*sg, w, x, &rec);
    double ref_loss = 0;
    at::Tensor ref = pc::test::ObsReference("sparsegpt", w, x, c.ref, &ref_loss);
    CHECK((ours == 0).equal(ref == 0));
    CHECK(pc::test::MismatchFraction(ours, ref) == 0);
    CHECK(rec.values.at("obs_loss") == Approx(ref_loss).epsilon(pc::test::kLossRelTol));
  }
}
