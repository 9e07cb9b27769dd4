// The fused row kernel against core's definition (SplitError), and the per-site aggregates.
#include <catch2/catch.hpp>

#include <ATen/ATen.h>

#include <cmath>

#include "core/directional.h"
#include "metrics/site_stats.h"
#include "metrics/split_rows.h"

namespace {

// SplitRows and SplitError compute the same sums in a different order.
constexpr double kMaxRelKernelDiff = 1e-12;

double RelDiff(const at::Tensor& a, const at::Tensor& b) {
  double scale = std::max(b.abs().max().item<double>(), 1e-300);
  return (a - b).abs().max().item<double>() / scale;
}

}  // namespace

TEST_CASE("SplitRows equals core's SplitError in both frames, zero rows included", "[metrics]") {
  at::Generator gen = at::detail::createCPUGenerator(3);
  for (int64_t d : {1, 7, 8, 64, 77}) {
    at::Tensor ref = at::randn({5, 11, d}, gen);
    at::Tensor out = ref + 0.1 * at::randn({5, 11, d}, gen);
    at::Tensor h = at::randn({5, 11, d}, gen);
    ref[1][2].zero_();  // ‖ref‖ = 0: skipped in the self frame
    h[0][3].zero_();    // ‖h‖ = 0: skipped in the incoming frame
    INFO("d = " << d);

    pc::RowSplit s = pc::SplitRows(out, ref);
    pc::DirectionalSplit c = pc::SplitAgainstSelf(ref, out);
    CHECK(RelDiff(s.iso, c.iso) < kMaxRelKernelDiff);
    CHECK(RelDiff(s.p, c.p) < kMaxRelKernelDiff);
    CHECK(RelDiff(s.par, c.par) < kMaxRelKernelDiff);
    CHECK(RelDiff(s.perp, c.perp) < kMaxRelKernelDiff);
    CHECK(RelDiff(s.dir_sq, c.dir_sq) < kMaxRelKernelDiff);
    CHECK(RelDiff(s.ref_sq, c.dir_sq) < kMaxRelKernelDiff);

    pc::RowSplit si = pc::SplitRows(out, ref, h);
    pc::DirectionalSplit ci = pc::SplitError(out.to(at::kDouble) - ref.to(at::kDouble), h);
    CHECK(RelDiff(si.iso, ci.iso) < kMaxRelKernelDiff);
    CHECK(RelDiff(si.p, ci.p) < kMaxRelKernelDiff);
    CHECK(RelDiff(si.perp, ci.perp) < kMaxRelKernelDiff);
    CHECK(RelDiff(si.dir_sq, ci.dir_sq) < kMaxRelKernelDiff);
    CHECK(RelDiff(si.ref_sq, (ref.to(at::kDouble) * ref.to(at::kDouble)).sum(-1).reshape({-1})) < kMaxRelKernelDiff);
    CHECK(RelDiff(si.out_sq, (out.to(at::kDouble) * out.to(at::kDouble)).sum(-1).reshape({-1})) < kMaxRelKernelDiff);
    CHECK(RelDiff(si.dot, (out.to(at::kDouble) * ref.to(at::kDouble)).sum(-1).reshape({-1})) < kMaxRelKernelDiff);
    // Invalid rows: p = par = 0, perp = iso (as SplitError).
    const int64_t zero_row = 1 * 11 + 2;
    CHECK(s.p[zero_row].item<double>() == 0);
    CHECK(s.perp[zero_row].item<double>() == s.iso[zero_row].item<double>());
  }
}

TEST_CASE("SplitRows accepts bf16 and rejects mismatched shapes", "[metrics]") {
  at::Tensor a = at::randn({4, 16}).to(at::kBFloat16), b = at::randn({4, 16}).to(at::kBFloat16);
  pc::RowSplit s = pc::SplitRows(a, b);
  pc::DirectionalSplit c = pc::SplitAgainstSelf(b.to(at::kFloat), a.to(at::kFloat));
  CHECK(RelDiff(s.perp, c.perp) < kMaxRelKernelDiff);
  CHECK_THROWS_WITH(pc::SplitRows(at::zeros({2, 3}), at::zeros({2, 4})),
                    Catch::Matchers::Contains("output shape [2, 3] differs from reference shape [2, 4]"));
}

TEST_CASE("site aggregates: means, ratios of sums, exact percentiles, skipped tokens", "[metrics]") {
  // Reference rows along e0 with norms 1..4; errors chosen so rel_iso = 0.01·k², half parallel.
  const int64_t n = 4, d = 3;
  at::Tensor ref = at::zeros({n + 1, d}), out = at::zeros({n + 1, d});
  for (int64_t k = 0; k < n; ++k) {
    double norm = k + 1, e = 0.1 * (k + 1) * norm / std::sqrt(2.0);
    ref[k][0] = norm;
    out[k][0] = norm + e;  // parallel part e
    out[k][1] = e;         // perpendicular part e
  }
  // Row n: ‖ref‖ = 0 → skipped.
  out[n][2] = 1;
  pc::SiteAccumulator acc;
  acc.Add(pc::SplitRows(out, ref), false);
  pc::SiteAggregate a = acc.Finish();
  CHECK(a.tokens == n);
  CHECK(a.skipped_tokens == 1);
  // rel_iso_k = 0.01 (k+1)²: 0.01, 0.04, 0.09, 0.16; mean 0.075.
  CHECK(a.mean_rel_iso == Approx(0.075).epsilon(1e-6));
  CHECK(a.mean_rel_par == Approx(0.0375).epsilon(1e-6));
  CHECK(a.mean_rel_perp == Approx(0.0375).epsilon(1e-6));
  // ratio of sums: Σ 0.01 (k+1)^4 / Σ (k+1)² = 0.01 · 354 / 30.
  CHECK(a.ratio_iso == Approx(0.01 * 354.0 / 30.0).epsilon(1e-6));
  CHECK(a.ratio_perp == Approx(0.005 * 354.0 / 30.0).epsilon(1e-6));
  // numpy.percentile([.01,.04,.09,.16], [50,90,99]) = .065, .139, .1579
  CHECK(a.percentile[0][0] == Approx(0.065).epsilon(1e-6));
  CHECK(a.percentile[0][1] == Approx(0.139).epsilon(1e-6));
  CHECK(a.percentile[0][2] == Approx(0.1579).epsilon(1e-6));
  CHECK(a.mean_rel_p > 0);
  CHECK(a.mean_norm_ratio > 1);
  CHECK(a.mean_cos < 1);

  pc::SiteAccumulator empty;
  pc::SiteAggregate z = empty.Finish();
  CHECK(z.tokens == 0);
  CHECK(std::isnan(z.mean_rel_iso));
  CHECK(std::isnan(z.percentile[2][2]));
}
