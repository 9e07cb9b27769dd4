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
