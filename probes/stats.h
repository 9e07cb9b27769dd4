// probes/stats.h — the few statistics the probes report themselves: percentiles (numpy's "linear"),
// fixed-bin histograms and mean ± sample standard deviation. (Correlations with confidence
// intervals live in reports/, which the command layer uses.)
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

namespace pc::probes {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The percentiles every distribution is summarised by, in this order (column names p01 ... p99).
inline constexpr double kPercentiles[] = {1, 5, 25, 50, 75, 95, 99};
inline constexpr int kNumPercentiles = 7;

struct Summary {
  int64_t n = 0;
  double mean = kNaN, min = kNaN, max = kNaN;
  double pct[kNumPercentiles] = {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN};  // at kPercentiles
};
// NaN values are left out (and not counted). An empty input gives n = 0 and NaNs.
Summary Summarize(std::vector<float> values);
// The q-th percentile (0..100) of sorted values, linear interpolation (numpy's default).
double PercentileSorted(const std::vector<float>& sorted, double q);

struct Histogram {
  std::vector<double> edges;    // bins + 1, ascending
  std::vector<int64_t> counts;  // bins; the last bin includes its right edge
  int64_t below = 0, above = 0; // values outside [edges.front(), edges.back()]
};
// `bins` equal bins over [lo, hi] (hi > lo; equal ends are widened by 0.5 each side).
Histogram MakeHistogram(const std::vector<float>& values, int bins, double lo, double hi);
// Over the central 99% of the values ([p0.5, p99.5]); the rest counted in below/above.
Histogram MakeCentralHistogram(const std::vector<float>& values, int bins);

struct MeanStd {
  double mean = kNaN;
  double std = kNaN;  // sample standard deviation (n − 1); 0 for one value
  int64_t n = 0;
};
MeanStd MeanAndStd(const std::vector<double>& values);

}  // namespace pc::probes
