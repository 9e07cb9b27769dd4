// metrics/site_stats.h — streaming aggregation of per-token directional errors at one site
// (docs/METRICS.md "Aggregates").
//
// A token is valid when the relative forms are defined: ‖ref‖ > 0 and, in the "incoming"
// frame, ‖h‖ > 0 too; other tokens are skipped and counted (docs/METRICS.md). Over
// valid tokens, in float64: means of the relative forms, ratios of sums (Σ iso / Σ ‖ref‖²,
// ...), means of the absolute forms, cosine and norm ratio. Percentiles (p50/p90/p99, linear
// interpolation between order statistics as numpy's default) of the relative iso/par/perp
// are exact: each valid token's three relative values are kept in float32 (12 bytes per
// token and entry).
#pragma once

#include <cstdint>
#include <vector>

#include "metrics/site_columns.h"
#include "metrics/split_rows.h"

namespace pc {

// Per-token relative quantities kept for percentiles, in this order (kSitePercentileQuantities,
// metrics/site_columns.h), and the percentile levels of the sites table's p*_rel_* columns.
enum class RelQuantity : int { kIso = 0, kPar = 1, kPerp = 2 };
inline constexpr int kNumRelQuantities = 3;
inline constexpr double kPercentiles[3] = {kSitePercentileLevels[0], kSitePercentileLevels[1], kSitePercentileLevels[2]};

struct SiteAggregate {
  int64_t tokens = 0;          // valid tokens
  int64_t skipped_tokens = 0;  // ‖ref‖ = 0 (or ‖h‖ = 0 in the incoming frame)
  // Means over valid tokens of iso/‖ref‖², par/‖ref‖², perp/‖ref‖², p/‖ref‖.
  double mean_rel_iso = 0, mean_rel_par = 0, mean_rel_perp = 0, mean_rel_p = 0;
  // Ratios of sums: Σiso/Σ‖ref‖², Σpar/Σ‖ref‖², Σperp/Σ‖ref‖², Σp/Σ‖ref‖.
  double ratio_iso = 0, ratio_par = 0, ratio_perp = 0, ratio_p = 0;
  // Means of the absolute forms and of ‖ref‖².
  double mean_iso = 0, mean_par = 0, mean_perp = 0, mean_p = 0, mean_ref_sq = 0;
  // Means of cos∠(out, ref) (0 where ‖out‖ = 0) and ‖out‖/‖ref‖.
  double mean_cos = 0, mean_norm_ratio = 0;
  // The directional-decomposition paper's forms, norms not squares: means over valid tokens of
  // ‖e‖/‖ref‖, ‖e∥‖/‖ref‖ = |p|/‖ref‖ and ‖e⊥‖/‖ref‖ (relnorm_*), and the same over the last token
  // of each window only (last_relnorm_*, over last_tokens valid last tokens; NaN without a period).
  double mean_relnorm_iso = 0, mean_relnorm_par = 0, mean_relnorm_perp = 0;
  int64_t last_tokens = 0;
  double last_relnorm_iso = 0, last_relnorm_par = 0, last_relnorm_perp = 0;
  // percentile[q][k]: RelQuantity q at kPercentiles[k]; NaN when no token is valid.
  double percentile[kNumRelQuantities][3] = {};
};

// Per-token values derived from a RowSplit for one frame.
struct TokenValues {
  bool valid;
  double rel_iso, rel_par, rel_perp, rel_p, cos, norm_ratio;
};
// incoming: the denominator is ‖ref‖² (the reference update) and validity also needs ‖h‖ > 0.
TokenValues TokenValuesAt(const RowSplit& s, int64_t row, bool incoming);

class SiteAccumulator {
 public:
  // Adds every row of `s` (one frame's split of a batch of tokens). `period` > 0: the rows are
  // windows of `period` tokens back to back, and row i is a window's last token when
  // i % period == period − 1 (last_relnorm_*).
  void Add(const RowSplit& s, bool incoming, int64_t period = 0);
  SiteAggregate Finish() const;
  int64_t kept_values() const { return static_cast<int64_t>(rel_[0].size()); }

 private:
  int64_t valid_ = 0, skipped_ = 0;
  double sum_rel_iso_ = 0, sum_rel_par_ = 0, sum_rel_perp_ = 0, sum_rel_p_ = 0;
  double sum_iso_ = 0, sum_par_ = 0, sum_perp_ = 0, sum_p_ = 0, sum_ref_sq_ = 0, sum_ref_norm_ = 0;
  double sum_cos_ = 0, sum_norm_ratio_ = 0;
  double sum_relnorm_[3] = {}, sum_last_relnorm_[3] = {};  // iso, par, perp
  int64_t last_valid_ = 0;
  bool has_period_ = false;
  std::vector<float> rel_[kNumRelQuantities];
};

// Linear-interpolation percentile (numpy "linear") of `values` (modified: partially sorted).
// NaN for an empty vector. q in [0, 100].
double Percentile(std::vector<float>& values, double q);
double Percentile(std::vector<double>& values, double q);

}  // namespace pc
