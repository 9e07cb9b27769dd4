#include "reports/bootstrap_grid.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <numeric>

#include "core/error.h"
#include "reports/parallel.h"
#include "reports/stats.h"

namespace pc::reports {
namespace {

constexpr size_t kCoefficients = kAllCoefficients.size();
constexpr size_t kPearson = 0, kPearsonLog = 1, kSpearman = 2, kKendall = 3;
static_assert(kAllCoefficients[kPearson] == Coefficient::kPearson &&
                  kAllCoefficients[kPearsonLog] == Coefficient::kPearsonLog &&
                  kAllCoefficients[kSpearman] == Coefficient::kSpearman &&
                  kAllCoefficients[kKendall] == Coefficient::kKendallTauB,
              "coefficient order");

// ---- the arithmetic of stats.cc, per variable (the same operations in the same order) ----

bool IsConstant(const std::vector<double>& v) {
  return std::all_of(v.begin(), v.end(), [&](double a) { return a == v.front(); });
}

// Deviations from the mean scaled by a power of two so the largest is in [0.5, 1), and their sum of squares
// (stats.cc ScaledDeviations; PearsonCore accumulates Σd² in the same order).
void ScaledDeviations(const std::vector<double>& v, std::vector<double>* d, double* ss) {
  const double m = std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
  d->resize(v.size());
  double big = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    (*d)[i] = v[i] - m;
    big = std::max(big, std::fabs((*d)[i]));
  }
  int exponent = 0;
  std::frexp(big, &exponent);
  double s = 0;
  for (double& a : *d) {
    a = std::ldexp(a, -exponent);
    s += a * a;
  }
  *ss = s;
}

double Clamp1(double r) {
  return std::min(1.0, std::max(-1.0, r));
}

double PearsonFromDeviations(const std::vector<double>& dx, double sxx, const std::vector<double>& dy, double syy) {
  double sxy = 0;
  for (size_t i = 0; i < dx.size(); ++i) sxy += dx[i] * dy[i];
  return Clamp1(sxy / (std::sqrt(sxx) * std::sqrt(syy)));
}

// One variable on one resample: everything the four coefficients need from it alone.
struct Prepared {
  std::vector<double> v;  // the resampled values
  bool constant = false;
  std::vector<double> dev, rank_dev, log_dev;
  double ss = 0, rank_ss = 0, log_ss = 0;
  bool log_usable = false;    // the logs exist and are not constant
  std::vector<size_t> order;  // positions sorted by value
  int64_t ties = 0;           // pairs of equal values
  std::vector<double> ranks, logs;
  std::vector<int8_t> signs;  // n <= kMaxSignRuns: sign(v[j] − v[i]) for every pair i < j, row by row
};

// Up to this many runs Kendall's τ-b is counted from the pair signs (n²/2 bytes per variable); above it by
// merging (n log n).
constexpr size_t kMaxSignRuns = 256;

void Prepare(const std::vector<double>& values, const std::vector<size_t>& indices, bool want_log, Prepared* p) {
  const size_t n = indices.size();
  p->v.resize(n);
  for (size_t i = 0; i < n; ++i) p->v[i] = values[indices[i]];
  p->constant = IsConstant(p->v);
  p->log_usable = false;
  if (p->constant) return;
  ScaledDeviations(p->v, &p->dev, &p->ss);
  // Average ranks (stats.cc AverageRanks: ties share the mean of their 1-based ranks).
  p->order.resize(n);
  std::iota(p->order.begin(), p->order.end(), size_t{0});
  // Any order of equal values gives the same average ranks and τ-b counts.
  std::sort(p->order.begin(), p->order.end(), [&](size_t a, size_t b) { return p->v[a] < p->v[b]; });
  p->ranks.resize(n);
  p->ties = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j + 1 < n && p->v[p->order[j + 1]] == p->v[p->order[i]]) ++j;
    const double rank = 0.5 * double(i + j) + 1.0;
    for (size_t k = i; k <= j; ++k) p->ranks[p->order[k]] = rank;
    const int64_t run = int64_t(j - i + 1);
    p->ties += run * (run - 1) / 2;
    i = j + 1;
  }
  ScaledDeviations(p->ranks, &p->rank_dev, &p->rank_ss);
  if (want_log) {
    p->logs.resize(n);
    for (size_t i = 0; i < n; ++i) p->logs[i] = std::log(p->v[i]);
    p->log_usable = !IsConstant(p->logs);
    if (p->log_usable) ScaledDeviations(p->logs, &p->log_dev, &p->log_ss);
  }
  if (n <= kMaxSignRuns) {
    p->signs.resize(n * (n - 1) / 2);
    size_t k = 0;
    for (size_t i = 0; i < n; ++i) {
      for (size_t j = i + 1; j < n; ++j) p->signs[k++] = int8_t((p->v[j] > p->v[i]) - (p->v[j] < p->v[i]));
    }
  }
}

// The (q)-quantile of `v` as QuantileSorted(sorted v, q) computes it, by selection instead of a full sort
// (`v` is reordered).
double QuantileBySelection(std::vector<double>& v, double q) {
  const double h = double(v.size() - 1) * q;
  const size_t lo = size_t(std::floor(h));
  if (lo + 1 >= v.size()) return *std::max_element(v.begin(), v.end());
  std::nth_element(v.begin(), v.begin() + long(lo), v.end());
  const double a = v[lo];
  const double b = *std::min_element(v.begin() + long(lo) + 1, v.end());
  return a + (h - double(lo)) * (b - a);
}

// Scratch space of one worker for Kendall's τ-b.
struct KendallScratch {
  std::vector<double> xs, ys, tmp;
};

// τ-b of x and y on one resample (stats.cc KendallCore: the same integer counts, the same final formula).
double KendallTauB(const Prepared& x, const Prepared& y, KendallScratch* s) {
  const size_t n = x.v.size();
  const int64_t tot = int64_t(n) * int64_t(n - 1) / 2;
  if (n <= kMaxSignRuns) {
    // concordant − discordant = Σ over pairs of sign(Δx)·sign(Δy) (= tot − xtie − ytie + ntie − 2·dis).
    int32_t sum = 0;
    const int8_t* a = x.signs.data();
    const int8_t* b = y.signs.data();
    for (size_t k = 0; k < x.signs.size(); ++k) sum += int32_t(a[k] * b[k]);
    return Clamp1(double(sum) / std::sqrt(double(tot - x.ties) * double(tot - y.ties)));
  }
  s->xs.resize(n);
  s->ys.resize(n);
  s->tmp.resize(n);
  for (size_t i = 0; i < n; ++i) {
    s->xs[i] = x.v[x.order[i]];
    s->ys[i] = y.v[x.order[i]];
  }
  // Within a run of equal x, y ascending (KendallCore sorts by (x, y)).
  for (size_t i = 0; i < n;) {
    size_t j = i + 1;
    while (j < n && s->xs[j] == s->xs[i]) ++j;
    if (j - i > 1) std::sort(s->ys.begin() + long(i), s->ys.begin() + long(j));
    i = j;
  }
  int64_t ntie = 0;
  for (size_t i = 0, run = 1; i < n; ++i) {
    if (i + 1 < n && s->xs[i + 1] == s->xs[i] && s->ys[i + 1] == s->ys[i]) {
      ++run;
    } else {
      ntie += int64_t(run) * int64_t(run - 1) / 2;
      run = 1;
    }
  }
  const int64_t dis = MergeCountInversions(s->ys, s->tmp, 0, n);
  const int64_t con_minus_dis = tot - x.ties - y.ties + ntie - 2 * dis;
  return Clamp1(double(con_minus_dis) / std::sqrt(double(tot - x.ties) * double(tot - y.ties)));
}

bool AllPositive(const std::vector<double>& v) {
  return std::all_of(v.begin(), v.end(), [](double a) { return a > 0; });
}

}  // namespace

std::vector<std::vector<std::vector<BootstrapInterval>>> BootstrapCorrelationGrid(
    const std::vector<std::vector<double>>& xs, const std::vector<std::string>& x_names,
    const std::vector<std::vector<double>>& ys, const std::vector<std::string>& y_names,
    const BootstrapOptions& options, int threads) {
  options.Validate();
  PC_CHECK(xs.size() == x_names.size() && ys.size() == y_names.size(), "bootstrap grid: ", xs.size(),
           " x variables with ", x_names.size(), " names, ", ys.size(), " y variables with ", y_names.size(), " names");
  const size_t n = xs.empty() ? (ys.empty() ? 0 : ys[0].size()) : xs[0].size();
  for (size_t i = 0; i < xs.size(); ++i) {
    PC_CHECK(xs[i].size() == n, "bootstrap grid: ", x_names[i], " has ", xs[i].size(), " values, expected ", n);
  }
  for (size_t j = 0; j < ys.size(); ++j) {
    PC_CHECK(ys[j].size() == n, "bootstrap grid: ", y_names[j], " has ", ys[j].size(), " values, expected ", n);
  }

  // Estimates on all runs (the library's own checks and texts).
  std::vector<std::vector<std::vector<BootstrapInterval>>> out(
      xs.size(), std::vector<std::vector<BootstrapInterval>>(ys.size(), std::vector<BootstrapInterval>(kCoefficients)));
  for (size_t i = 0; i < xs.size(); ++i) {
    for (size_t j = 0; j < ys.size(); ++j) {
      for (size_t c = 0; c < kCoefficients; ++c) {
        BootstrapInterval& r = out[i][j][c];
        r.estimate = Correlation(kAllCoefficients[c], xs[i], ys[j], VariableNames{x_names[i], y_names[j]});
        r.resamples = options.resamples;
        r.confidence = options.confidence;
        r.seed = options.seed;
        r.detail = r.estimate.detail;
      }
    }
  }
  if (n < kMinObservations || xs.empty() || ys.empty()) return out;

  std::vector<bool> x_log(xs.size()), y_log(ys.size());
  for (size_t i = 0; i < xs.size(); ++i) x_log[i] = AllPositive(xs[i]);
  for (size_t j = 0; j < ys.size(); ++j) y_log[j] = AllPositive(ys[j]);

  // Blocks of x variables; each worker replays every resample for its block.
  const size_t block = 32;
  const size_t blocks = (xs.size() + block - 1) / block;
  ParallelFor(blocks, threads, [&](size_t bi) {
    const size_t x0 = bi * block, x1 = std::min(xs.size(), x0 + block);
    // samples[x - x0][y][c]: the coefficient on each resample where it is defined.
    std::vector<std::vector<std::array<std::vector<double>, kCoefficients>>> samples(
        x1 - x0, std::vector<std::array<std::vector<double>, kCoefficients>>(ys.size()));
    bool any = false;
    for (size_t i = x0; i < x1; ++i) {
      for (size_t j = 0; j < ys.size(); ++j) {
        for (size_t c = 0; c < kCoefficients; ++c) {
          if (out[i][j][c].estimate.ok()) {
            samples[i - x0][j][c].reserve(size_t(options.resamples));
            any = true;
          }
        }
      }
    }
    if (!any) return;
    Resampler resampler(n, options.seed);
    std::vector<size_t> indices;
    std::vector<Prepared> py(ys.size()), px(x1 - x0);
    KendallScratch scratch;
    for (int b = 0; b < options.resamples; ++b) {
      resampler.Next(&indices);
      for (size_t j = 0; j < ys.size(); ++j) Prepare(ys[j], indices, y_log[j], &py[j]);
      for (size_t i = x0; i < x1; ++i) Prepare(xs[i], indices, x_log[i], &px[i - x0]);
      for (size_t i = x0; i < x1; ++i) {
        const Prepared& x = px[i - x0];
        if (x.constant) continue;
        for (size_t j = 0; j < ys.size(); ++j) {
          const Prepared& y = py[j];
          if (y.constant) continue;
          const auto& est = out[i][j];
          auto& s = samples[i - x0][j];
          if (est[kPearson].estimate.ok()) s[kPearson].push_back(PearsonFromDeviations(x.dev, x.ss, y.dev, y.ss));
          if (est[kPearsonLog].estimate.ok() && x.log_usable && y.log_usable) {
            s[kPearsonLog].push_back(PearsonFromDeviations(x.log_dev, x.log_ss, y.log_dev, y.log_ss));
          }
          if (est[kSpearman].estimate.ok()) {
            s[kSpearman].push_back(PearsonFromDeviations(x.rank_dev, x.rank_ss, y.rank_dev, y.rank_ss));
          }
          if (est[kKendall].estimate.ok()) s[kKendall].push_back(KendallTauB(x, y, &scratch));
        }
      }
    }
    const double tail = (1.0 - options.confidence) / 2.0;
    for (size_t i = x0; i < x1; ++i) {
      for (size_t j = 0; j < ys.size(); ++j) {
        for (size_t c = 0; c < kCoefficients; ++c) {
          BootstrapInterval& r = out[i][j][c];
          if (!r.estimate.ok()) continue;
          std::vector<double>& v = samples[i - x0][j][c];
          r.used = int(v.size());
          r.dropped = r.resamples - r.used;
          if (v.empty()) {
            r.detail = Str("the coefficient is undefined in all ", r.resamples, " resamples");
            continue;
          }
          r.lo = QuantileBySelection(v, tail);
          r.hi = QuantileBySelection(v, 1.0 - tail);
          std::vector<double>().swap(v);
        }
      }
    }
  });
  return out;
}

}  // namespace pc::reports
