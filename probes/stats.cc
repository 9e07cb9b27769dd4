#include "probes/stats.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace pc::probes {

double PercentileSorted(const std::vector<float>& sorted, double q) {
  if (sorted.empty()) return kNaN;
  const double pos = q / 100.0 * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return static_cast<double>(sorted[lo]) + frac * (static_cast<double>(sorted[hi]) - static_cast<double>(sorted[lo]));
}

Summary Summarize(std::vector<float> values) {
  values.erase(std::remove_if(values.begin(), values.end(), [](float v) { return std::isnan(v); }), values.end());
  Summary s;
  s.n = static_cast<int64_t>(values.size());
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  double sum = 0;
  for (float v : values) sum += v;
  s.mean = sum / static_cast<double>(values.size());
  s.min = values.front();
  s.max = values.back();
  for (int i = 0; i < kNumPercentiles; ++i) s.pct[i] = PercentileSorted(values, kPercentiles[i]);
  return s;
}

Histogram MakeHistogram(const std::vector<float>& values, int bins, double lo, double hi) {
  PC_CHECK(bins >= 1, "histogram: at least one bin, got ", bins);
  if (!(hi > lo)) {
    lo -= 0.5;
    hi += 0.5;
  }
  Histogram h;
  h.counts.assign(bins, 0);
  for (int i = 0; i <= bins; ++i) h.edges.push_back(lo + (hi - lo) * i / bins);
  for (float v : values) {
    if (std::isnan(v)) continue;
    if (v < lo) {
      ++h.below;
    } else if (v > hi) {
      ++h.above;
    } else {
      int b = static_cast<int>((v - lo) / (hi - lo) * bins);
      ++h.counts[std::min(b, bins - 1)];
    }
  }
  return h;
}

Histogram MakeCentralHistogram(const std::vector<float>& values, int bins) {
  std::vector<float> sorted;
  for (float v : values) {
    if (!std::isnan(v)) sorted.push_back(v);
  }
  std::sort(sorted.begin(), sorted.end());
  if (sorted.empty()) return MakeHistogram(values, bins, 0, 1);
  return MakeHistogram(values, bins, PercentileSorted(sorted, 0.5), PercentileSorted(sorted, 99.5));
}

MeanStd MeanAndStd(const std::vector<double>& values) {
  MeanStd m;
  m.n = static_cast<int64_t>(values.size());
  if (values.empty()) return m;
  double sum = 0;
  for (double v : values) sum += v;
  m.mean = sum / static_cast<double>(m.n);
  double ss = 0;
  for (double v : values) ss += (v - m.mean) * (v - m.mean);
  m.std = m.n > 1 ? std::sqrt(ss / static_cast<double>(m.n - 1)) : 0.0;
  return m;
}

}  // namespace pc::probes
