#include "reports/stats.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>

#include "core/error.h"
#include "core/strings.h"

namespace pc::reports {
namespace {

void CheckSameLength(const std::vector<double>& x, const std::vector<double>& y, const VariableNames& names) {
  PC_CHECK(x.size() == y.size(), "correlation of ", names.y, " on ", names.x, ": ", names.x, " has ",
           x.size(), " values but ", names.y, " has ", y.size(), " (one value per run expected in both)");
}

// n/a reason for a non-finite value, or "".
std::string NonFinite(const std::vector<double>& v, const std::string& name) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (!std::isfinite(v[i])) return Str(name, " has a non-finite value (", FormatDouble(v[i]), ") at run ", i);
  }
  return "";
}

std::string NonPositive(const std::vector<double>& v, const std::string& name) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (!(v[i] > 0)) return Str(name, " has a value <= 0 (", FormatDouble(v[i]), " at run ", i, "), so no log form");
  }
  return "";
}

bool IsConstant(const std::vector<double>& v) {
  return std::all_of(v.begin(), v.end(), [&](double a) { return a == v.front(); });
}

// The checks shared by every coefficient: an empty Stat when the coefficient may be computed.
std::optional<Stat> Precheck(const std::vector<double>& x, const std::vector<double>& y, const VariableNames& names,
                             bool log_form) {
  CheckSameLength(x, y, names);
  if (x.size() < kMinObservations) {
    return Stat::Insufficient(Str(x.size(), " observations, need at least ", kMinObservations));
  }
  std::string bad = NonFinite(x, names.x);
  if (bad.empty()) bad = NonFinite(y, names.y);
  if (!bad.empty()) return Stat::NotApplicable(bad);
  if (log_form) {
    std::string r = NonPositive(x, names.x);
    if (r.empty()) r = NonPositive(y, names.y);
    if (!r.empty()) return Stat::NotApplicable(r);
  }
  if (IsConstant(x)) return Stat::NotApplicable(Str(names.x, " is constant"));
  if (IsConstant(y)) return Stat::NotApplicable(Str(names.y, " is constant"));
  return std::nullopt;
}

double Mean(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0) / double(v.size()); }

// Deviations from the mean, scaled by a power of two (exact) so that the largest is in [0.5, 1): no
// overflow or underflow in the sums below.
// Precondition: v is not constant, so some deviation is non-zero.
std::vector<double> ScaledDeviations(const std::vector<double>& v) {
  double m = Mean(v);
  std::vector<double> d(v.size());
  double big = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    d[i] = v[i] - m;
    big = std::max(big, std::fabs(d[i]));
  }
  PC_ASSERT(big > 0, "deviations of a non-constant variable");
  int exponent = 0;
  std::frexp(big, &exponent);
  for (double& a : d) a = std::ldexp(a, -exponent);
  return d;
}

double Clamp1(double r) { return std::min(1.0, std::max(-1.0, r)); }

// Pearson r of two finite, non-constant variables of equal length.
double PearsonCore(const std::vector<double>& x, const std::vector<double>& y) {
  std::vector<double> dx = ScaledDeviations(x), dy = ScaledDeviations(y);
  double sxx = 0, syy = 0, sxy = 0;
  for (size_t i = 0; i < dx.size(); ++i) {
    sxx += dx[i] * dx[i];
    syy += dy[i] * dy[i];
    sxy += dx[i] * dy[i];
  }
  return Clamp1(sxy / (std::sqrt(sxx) * std::sqrt(syy)));
}

// Σ t(t−1)/2 over runs of equal values in a sorted sequence.
int64_t TiedPairs(const std::vector<double>& sorted) {
  int64_t pairs = 0, run = 1;
  for (size_t i = 1; i <= sorted.size(); ++i) {
    if (i < sorted.size() && sorted[i] == sorted[i - 1]) {
      ++run;
    } else {
      pairs += run * (run - 1) / 2;
      run = 1;
    }
  }
  return pairs;
}

// Kendall τ-b of finite, non-constant variables, O(n log n) (Knight 1966; the counts of scipy.stats.kendalltau).
double KendallCore(const std::vector<double>& x, const std::vector<double>& y) {
  const size_t n = x.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return x[a] < x[b] || (x[a] == x[b] && y[a] < y[b]); });

  std::vector<double> xs(n), ys(n);
  for (size_t i = 0; i < n; ++i) {
    xs[i] = x[order[i]];
    ys[i] = y[order[i]];
  }
  const int64_t xtie = TiedPairs(xs);
  int64_t ntie = 0;  // pairs tied in both x and y
  for (size_t i = 0, run = 1; i < n; ++i) {
    if (i + 1 < n && xs[i + 1] == xs[i] && ys[i + 1] == ys[i]) {
      ++run;
    } else {
      ntie += int64_t(run) * int64_t(run - 1) / 2;
      run = 1;
    }
  }
  // Within a run of equal x the y are ascending, so inversions count exactly the discordant pairs.
  std::vector<double> tmp(n);
  const int64_t dis = MergeCountInversions(ys, tmp, 0, n);
  const int64_t ytie = TiedPairs(ys);  // ys is now sorted
  const int64_t tot = int64_t(n) * int64_t(n - 1) / 2;
  PC_ASSERT(xtie < tot && ytie < tot, "non-constant variables have untied pairs");
  const int64_t con_minus_dis = tot - xtie - ytie + ntie - 2 * dis;
  // One square root of the product (exact in double for n < ~10^4): a perfect ordering gives exactly ±1.
  return Clamp1(double(con_minus_dis) / std::sqrt(double(tot - xtie) * double(tot - ytie)));
}

std::vector<double> Logs(const std::vector<double>& v) {
  std::vector<double> out(v.size());
  std::transform(v.begin(), v.end(), out.begin(), [](double a) { return std::log(a); });
  return out;
}

void CheckFinite(const std::vector<double>& values, const char* what) {
  for (size_t i = 0; i < values.size(); ++i) {
    PC_CHECK(std::isfinite(values[i]), what, ": value ", i, " is not finite (", values[i], ")");
  }
}

int Sign(Orientation o) { return o == Orientation::kHigherIsWorse ? 1 : -1; }

}  // namespace

int64_t MergeCountInversions(std::vector<double>& v, std::vector<double>& tmp, size_t lo, size_t hi) {
  if (hi - lo < 2) return 0;
  size_t mid = lo + (hi - lo) / 2;
  int64_t inv = MergeCountInversions(v, tmp, lo, mid) + MergeCountInversions(v, tmp, mid, hi);
  size_t i = lo, j = mid, k = lo;
  while (i < mid && j < hi) {
    if (v[j] < v[i]) {  // strictly smaller: every remaining left element forms an inversion with v[j]
      inv += int64_t(mid - i);
      tmp[k++] = v[j++];
    } else {
      tmp[k++] = v[i++];
    }
  }
  while (i < mid) tmp[k++] = v[i++];
  while (j < hi) tmp[k++] = v[j++];
  std::copy(tmp.begin() + lo, tmp.begin() + hi, v.begin() + lo);
  return inv;
}


std::string CoefficientKey(Coefficient c) {
  switch (c) {
    case Coefficient::kPearson: return "pearson";
    case Coefficient::kPearsonLog: return "pearson_log";
    case Coefficient::kSpearman: return "spearman";
    case Coefficient::kKendallTauB: return "kendall_tau_b";
  }
  PC_ASSERT(false, "unknown coefficient");
  return "";
}

std::string CoefficientTitle(Coefficient c) {
  switch (c) {
    case Coefficient::kPearson: return "Pearson r";
    case Coefficient::kPearsonLog: return "Pearson r (log)";
    case Coefficient::kSpearman: return "Spearman \xcf\x81";        // ρ
    case Coefficient::kKendallTauB: return "Kendall \xcf\x84-b";    // τ
  }
  PC_ASSERT(false, "unknown coefficient");
  return "";
}

Coefficient ParseCoefficient(const std::string& key, const std::string& what) {
  std::vector<std::string> keys;
  for (Coefficient c : kAllCoefficients) {
    if (CoefficientKey(c) == key) return c;
    keys.push_back(CoefficientKey(c));
  }
  PC_THROW(what, ": unknown correlation coefficient '", key, "' (supported: ", Join(keys, ", "), ")");
}

double Oriented(double rho, Orientation predictor, Orientation outcome) {
  return rho * Sign(predictor) * Sign(outcome);
}

double Strength(double rho, Compare compare, Orientation predictor, Orientation outcome) {
  return compare == Compare::kAbsolute ? std::fabs(rho) : Oriented(rho, predictor, outcome);
}

Stat Correlation(Coefficient c, const std::vector<double>& x, const std::vector<double>& y,
                 const VariableNames& names) {
  const bool log_form = c == Coefficient::kPearsonLog;
  if (auto early = Precheck(x, y, names, log_form)) return *early;
  switch (c) {
    case Coefficient::kPearson: return Stat::Of(PearsonCore(x, y));
    case Coefficient::kPearsonLog: {
      std::vector<double> lx = Logs(x), ly = Logs(y);
      // Distinct positive values can share a log only when they are adjacent doubles near 1.
      if (IsConstant(lx) || IsConstant(ly)) return Stat::NotApplicable("the logs of a variable are constant");
      return Stat::Of(PearsonCore(lx, ly));
    }
    case Coefficient::kSpearman: return Stat::Of(PearsonCore(AverageRanks(x), AverageRanks(y)));
    case Coefficient::kKendallTauB: return Stat::Of(KendallCore(x, y));
  }
  PC_ASSERT(false, "unknown coefficient");
  return {};
}

Stat Pearson(const std::vector<double>& x, const std::vector<double>& y, const VariableNames& names) {
  return Correlation(Coefficient::kPearson, x, y, names);
}
Stat PearsonLog(const std::vector<double>& x, const std::vector<double>& y, const VariableNames& names) {
  return Correlation(Coefficient::kPearsonLog, x, y, names);
}
Stat Spearman(const std::vector<double>& x, const std::vector<double>& y, const VariableNames& names) {
  return Correlation(Coefficient::kSpearman, x, y, names);
}
Stat KendallTauB(const std::vector<double>& x, const std::vector<double>& y, const VariableNames& names) {
  return Correlation(Coefficient::kKendallTauB, x, y, names);
}

std::vector<double> AverageRanks(const std::vector<double>& values) {
  CheckFinite(values, "ranks");
  const size_t n = values.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return values[a] < values[b]; });
  std::vector<double> ranks(n);
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j + 1 < n && values[order[j + 1]] == values[order[i]]) ++j;
    const double rank = 0.5 * double(i + j) + 1.0;  // mean of the 1-based ranks i+1 .. j+1
    for (size_t k = i; k <= j; ++k) ranks[order[k]] = rank;
    i = j + 1;
  }
  return ranks;
}

std::vector<double> DamageRanks(const std::vector<double>& values, Orientation orientation) {
  if (orientation == Orientation::kHigherIsWorse) return AverageRanks(values);
  std::vector<double> negated(values.size());
  std::transform(values.begin(), values.end(), negated.begin(), [](double v) { return -v; });
  return AverageRanks(negated);
}

std::vector<size_t> OrderByDamage(const std::vector<double>& values, Orientation orientation) {
  CheckFinite(values, "ranking");
  std::vector<size_t> order(values.size());
  std::iota(order.begin(), order.end(), size_t{0});
  const bool ascending = orientation == Orientation::kHigherIsWorse;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return ascending ? values[a] < values[b] : values[a] > values[b];
  });
  return order;
}

std::optional<Line> FitLine(const std::vector<double>& x, const std::vector<double>& y) {
  PC_CHECK(x.size() == y.size(), "fitted line: ", x.size(), " x values but ", y.size(), " y values");
  std::vector<double> fx, fy;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isfinite(x[i]) && std::isfinite(y[i])) {
      fx.push_back(x[i]);
      fy.push_back(y[i]);
    }
  }
  if (fx.size() < 2 || IsConstant(fx)) return std::nullopt;
  const double mx = Mean(fx), my = Mean(fy);
  double sxx = 0, sxy = 0;
  for (size_t i = 0; i < fx.size(); ++i) {
    sxx += (fx[i] - mx) * (fx[i] - mx);
    sxy += (fx[i] - mx) * (fy[i] - my);
  }
  if (!(sxx > 0) || !std::isfinite(sxx) || !std::isfinite(sxy)) return std::nullopt;
  Line line;
  line.slope = sxy / sxx;
  line.intercept = my - line.slope * mx;
  return line;
}

double QuantileSorted(const std::vector<double>& sorted, double q) {
  PC_ASSERT(!sorted.empty() && q >= 0 && q <= 1, "quantile of ", sorted.size(), " values at ", q);
  const double h = double(sorted.size() - 1) * q;
  const size_t lo = size_t(std::floor(h));
  if (lo + 1 >= sorted.size()) return sorted.back();
  return sorted[lo] + (h - double(lo)) * (sorted[lo + 1] - sorted[lo]);
}

}  // namespace pc::reports
