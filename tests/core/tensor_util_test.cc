#include <catch2/catch.hpp>

#include <ATen/ATen.h>

#include "core/blas.h"
#include "core/tensor_util.h"

TEST_CASE("Gram: XᵀX of the rows, symmetric, as at::mm gives it", "[core][gram]") {
  // Debian's OpenBLAS (LibTorch 1.13's BLAS) exports ssyrk, so the fast path is what runs there;
  // elsewhere (a LibTorch 2.x wheel's MKL, not exported) Gram is at::mm itself.
  if (pc::BlasKernels().rfind("OpenBLAS", 0) == 0) CHECK(pc::BlasSsyrk() != nullptr);
  at::manual_seed(3);
  for (auto [rows, in] : {std::pair<int64_t, int64_t>{1, 1}, {7, 3}, {300, 96}, {5, 130}}) {
    INFO(rows << " x " << in);
    at::Tensor x = at::randn({rows, in});
    at::Tensor g = pc::Gram(x);
    REQUIRE(g.sizes() == at::IntArrayRef({in, in}));
    CHECK(g.equal(g.t()));
    at::Tensor ref = at::mm(x.to(at::kDouble).t(), x.to(at::kDouble));
    CHECK(pc::MaxRelDiff(g.to(at::kDouble), ref) < 1e-5);
  }
  // Known answer: rows (1, 2), (3, 4) give [[10, 14], [14, 20]].
  at::Tensor x = at::tensor({1.0f, 2.0f, 3.0f, 4.0f}).view({2, 2});
  CHECK(pc::Gram(x).equal(at::tensor({10.0f, 14.0f, 14.0f, 20.0f}).view({2, 2})));
  // A non-contiguous input (a transposed view) is read as its values.
  at::Tensor y = at::randn({40, 12}).t();  // (12, 40)
  CHECK(pc::MaxRelDiff(pc::Gram(y).to(at::kDouble), at::mm(y.t(), y).to(at::kDouble)) < 1e-5);
}

TEST_CASE("GramAccumulator: the float64 sum of each batch's Gram, entry for entry", "[core][gram]") {
  at::manual_seed(5);
  for (int64_t in : {1, 3, 96, 130}) {
    INFO("in = " << in);
    pc::GramAccumulator acc;
    CHECK(acc.empty());
    at::Tensor ref;
    for (int64_t rows : {7, 300, 1, 64}) {
      at::Tensor x = at::randn({rows, in}) * (1.0 + rows);  // batches of different scales
      acc.Add(x);
      at::Tensor g = pc::Gram(x).to(at::kDouble);
      ref = ref.defined() ? ref + g : g;
    }
    CHECK_FALSE(acc.empty());
    const at::Tensor sum = acc.Finish();
    CHECK(acc.empty());
    REQUIRE(sum.scalar_type() == at::kDouble);
    CHECK(sum.equal(ref));  // the same float64 additions in the same order
    CHECK(sum.equal(sum.t()));
  }
  // Known answer over two batches: rows (1, 2), then (3, 4) give [[10, 14], [14, 20]].
  pc::GramAccumulator acc;
  acc.Add(at::tensor({1.0f, 2.0f}).view({1, 2}));
  acc.Add(at::tensor({3.0f, 4.0f}).view({1, 2}));
  CHECK(acc.Finish().equal(at::tensor({10.0, 14.0, 14.0, 20.0}, at::kDouble).view({2, 2})));
}
