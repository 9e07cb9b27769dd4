#include <catch2/catch.hpp>

#include <ATen/ATen.h>

#include "core/directional.h"

TEST_CASE("directional split: known answers", "[core][directional]") {
  // y = (3, 4), e = (1, 0): u = (0.6, 0.8), p = 0.6, par = 0.36, perp = 0.64, iso = 1.
  at::Tensor y = at::tensor({3.0, 4.0}, at::kDouble).view({1, 2});
  at::Tensor out = y + at::tensor({1.0, 0.0}, at::kDouble).view({1, 2});
  auto s = pc::SplitAgainstSelf(y, out);
  CHECK(s.iso.item<double>() == Approx(1.0));
  CHECK(s.p.item<double>() == Approx(0.6));
  CHECK(s.par.item<double>() == Approx(0.36));
  CHECK(s.perp.item<double>() == Approx(0.64));
  CHECK(s.dir_sq.item<double>() == Approx(25.0));
}

TEST_CASE("directional split: iso = par + perp on random batches", "[core][directional]") {
  at::manual_seed(0);
  at::Tensor y = at::randn({257, 96});
  at::Tensor out = y + 0.1 * at::randn({257, 96});
  auto s = pc::SplitAgainstSelf(y, out);
  at::Tensor rel = ((s.par + s.perp - s.iso).abs() / s.iso).max();
  CHECK(rel.item<double>() < 1e-12);
}

TEST_CASE("directional split: scaling is purely parallel, rotation is not", "[core][directional]") {
  at::manual_seed(1);
  at::Tensor y = at::randn({16, 32}, at::kDouble);
  auto scaled = pc::SplitAgainstSelf(y, 1.5 * y);
  CHECK((scaled.perp / scaled.iso).max().item<double>() < 1e-12);
  // par = (c-1)^2 ||y||^2
  CHECK(((scaled.par - 0.25 * scaled.dir_sq).abs() / scaled.dir_sq).max().item<double>() < 1e-12);
  CHECK((scaled.p > 0).all().item<bool>());
  // A norm-preserving rotation of each y moves it off its direction and p <= 0.
  at::Tensor z = at::randn({16, 32}, at::kDouble);
  at::Tensor u = y / y.norm(2, -1, true);
  at::Tensor w = z - (z * u).sum(-1, true) * u;
  w = w / w.norm(2, -1, true);
  double theta = 0.3;
  at::Tensor rotated = y.norm(2, -1, true) * (std::cos(theta) * u + std::sin(theta) * w);
  auto rot = pc::SplitAgainstSelf(y, rotated);
  CHECK((rot.p <= 0).all().item<bool>());
  CHECK((rot.perp > 0).all().item<bool>());
}

TEST_CASE("directional split: zero reference tokens are invalid", "[core][directional]") {
  at::Tensor y = at::zeros({2, 3});
  y[1] = at::tensor({1.0f, 0.0f, 0.0f});
  at::Tensor out = at::ones({2, 3});
  auto s = pc::SplitAgainstSelf(y, out);
  CHECK_FALSE(s.valid[0].item<bool>());
  CHECK(s.valid[1].item<bool>());
  CHECK(s.perp[0].item<double>() == Approx(s.iso[0].item<double>()));
}

TEST_CASE("parallel part and scaling", "[core][directional]") {
  at::manual_seed(2);
  at::Tensor h = at::randn({4, 5, 8});
  at::Tensor d = at::randn({4, 5, 8});
  at::Tensor par = pc::ParallelPart(d, h);
  at::Tensor perp = d - par;
  CHECK((perp * h).sum(-1).abs().max().item<float>() < 1e-5);
  CHECK(pc::ScaleParallelPerp(d, h, 1.0, 1.0).equal(par + (d - par)));
  at::Tensor zero_h = at::zeros({1, 8});
  CHECK(pc::ParallelPart(at::ones({1, 8}), zero_h).abs().sum().item<float>() == 0.0f);
}
