#include "metrics/site_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace pc {

TokenValues TokenValuesAt(const RowSplit& s, int64_t row, bool incoming) {
  const double ref_sq = s.ref_sq.data_ptr<double>()[row];
  const double dir_sq = s.dir_sq.data_ptr<double>()[row];
  TokenValues v{};
  v.valid = ref_sq > 0 && (!incoming || dir_sq > 0);
  if (!v.valid) return v;
  const double iso = s.iso.data_ptr<double>()[row], par = s.par.data_ptr<double>()[row];
  const double perp = s.perp.data_ptr<double>()[row], p = s.p.data_ptr<double>()[row];
  const double out_sq = s.out_sq.data_ptr<double>()[row], dot = s.dot.data_ptr<double>()[row];
  const double ref_norm = std::sqrt(ref_sq);
  v.rel_iso = iso / ref_sq;
  v.rel_par = par / ref_sq;
  v.rel_perp = perp / ref_sq;
  v.rel_p = p / ref_norm;
  // sqrt(x·x) == x exactly, so identical vectors give cos = 1 and ratio = 1 exactly.
  v.cos = out_sq > 0 ? dot / std::sqrt(out_sq * ref_sq) : 0.0;
  v.norm_ratio = std::sqrt(out_sq / ref_sq);
  return v;
}

void SiteAccumulator::Add(const RowSplit& s, bool incoming, int64_t period) {
  has_period_ = has_period_ || period > 0;
  const int64_t n = s.rows();
  const double* iso = s.iso.data_ptr<double>();
  const double* par = s.par.data_ptr<double>();
  const double* perp = s.perp.data_ptr<double>();
  const double* p = s.p.data_ptr<double>();
  const double* ref_sq = s.ref_sq.data_ptr<double>();
  for (auto& r : rel_) r.reserve(r.size() + static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    TokenValues v = TokenValuesAt(s, i, incoming);
    if (!v.valid) {
      ++skipped_;
      continue;
    }
    ++valid_;
    sum_rel_iso_ += v.rel_iso;
    sum_rel_par_ += v.rel_par;
    sum_rel_perp_ += v.rel_perp;
    sum_rel_p_ += v.rel_p;
    sum_iso_ += iso[i];
    sum_par_ += par[i];
    sum_perp_ += perp[i];
    sum_p_ += p[i];
    sum_ref_sq_ += ref_sq[i];
    sum_ref_norm_ += std::sqrt(ref_sq[i]);
    sum_cos_ += v.cos;
    sum_norm_ratio_ += v.norm_ratio;
    const double relnorm[3] = {std::sqrt(v.rel_iso), std::sqrt(v.rel_par), std::sqrt(v.rel_perp)};
    const bool last = period > 0 && i % period == period - 1;
    for (int q = 0; q < 3; ++q) {
      sum_relnorm_[q] += relnorm[q];
      if (last) sum_last_relnorm_[q] += relnorm[q];
    }
    last_valid_ += last ? 1 : 0;
    rel_[0].push_back(static_cast<float>(v.rel_iso));
    rel_[1].push_back(static_cast<float>(v.rel_par));
    rel_[2].push_back(static_cast<float>(v.rel_perp));
  }
}

SiteAggregate SiteAccumulator::Finish() const {
  SiteAggregate a;
  a.tokens = valid_;
  a.skipped_tokens = skipped_;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (valid_ == 0) {
    for (double* x : {&a.mean_rel_iso, &a.mean_rel_par, &a.mean_rel_perp, &a.mean_rel_p, &a.ratio_iso, &a.ratio_par,
                      &a.ratio_perp, &a.ratio_p, &a.mean_iso, &a.mean_par, &a.mean_perp, &a.mean_p, &a.mean_ref_sq,
                      &a.mean_cos, &a.mean_norm_ratio, &a.mean_relnorm_iso, &a.mean_relnorm_par, &a.mean_relnorm_perp,
                      &a.last_relnorm_iso, &a.last_relnorm_par, &a.last_relnorm_perp}) {
      *x = nan;
    }
    for (auto& row : a.percentile) std::fill(std::begin(row), std::end(row), nan);
    return a;
  }
  const double n = static_cast<double>(valid_);
  a.mean_rel_iso = sum_rel_iso_ / n;
  a.mean_rel_par = sum_rel_par_ / n;
  a.mean_rel_perp = sum_rel_perp_ / n;
  a.mean_rel_p = sum_rel_p_ / n;
  a.ratio_iso = sum_iso_ / sum_ref_sq_;
  a.ratio_par = sum_par_ / sum_ref_sq_;
  a.ratio_perp = sum_perp_ / sum_ref_sq_;
  a.ratio_p = sum_p_ / sum_ref_norm_;
  a.mean_iso = sum_iso_ / n;
  a.mean_par = sum_par_ / n;
  a.mean_perp = sum_perp_ / n;
  a.mean_p = sum_p_ / n;
  a.mean_ref_sq = sum_ref_sq_ / n;
  a.mean_cos = sum_cos_ / n;
  a.mean_norm_ratio = sum_norm_ratio_ / n;
  a.mean_relnorm_iso = sum_relnorm_[0] / n;
  a.mean_relnorm_par = sum_relnorm_[1] / n;
  a.mean_relnorm_perp = sum_relnorm_[2] / n;
  a.last_tokens = last_valid_;
  const double nl = static_cast<double>(last_valid_);
  a.last_relnorm_iso = has_period_ && last_valid_ > 0 ? sum_last_relnorm_[0] / nl : nan;
  a.last_relnorm_par = has_period_ && last_valid_ > 0 ? sum_last_relnorm_[1] / nl : nan;
  a.last_relnorm_perp = has_period_ && last_valid_ > 0 ? sum_last_relnorm_[2] / nl : nan;
  for (int q = 0; q < kNumRelQuantities; ++q) {
    std::vector<float> values = rel_[q];
    for (int k = 0; k < 3; ++k) a.percentile[q][k] = Percentile(values, kPercentiles[k]);
  }
  return a;
}

namespace {
template <typename T>
double PercentileOf(std::vector<T>& values, double q) {
  PC_ASSERT(q >= 0 && q <= 100, "percentile ", q);
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  const double pos = q / 100.0 * static_cast<double>(values.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const double frac = pos - static_cast<double>(lo);
  std::nth_element(values.begin(), values.begin() + lo, values.end());
  const double a = values[lo];
  if (frac == 0 || lo + 1 >= values.size()) return a;
  const double b = *std::min_element(values.begin() + lo + 1, values.end());
  return a + frac * (b - a);
}
}  // namespace

double Percentile(std::vector<float>& values, double q) { return PercentileOf(values, q); }
double Percentile(std::vector<double>& values, double q) { return PercentileOf(values, q); }

}  // namespace pc
