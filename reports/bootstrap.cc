#include "reports/bootstrap.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace pc::reports {
namespace {

std::vector<double> Gather(const std::vector<double>& v, const std::vector<size_t>& indices) {
  std::vector<double> out(indices.size());
  for (size_t i = 0; i < indices.size(); ++i) out[i] = v[indices[i]];
  return out;
}

// Fills the percentile interval of `values` (modified: sorted) into lo/hi.
void PercentileInterval(std::vector<double>& values, double confidence, std::optional<double>* lo,
                        std::optional<double>* hi) {
  std::sort(values.begin(), values.end());
  const double tail = (1.0 - confidence) / 2.0;
  *lo = QuantileSorted(values, tail);
  *hi = QuantileSorted(values, 1.0 - tail);
}

std::string NoResampleDefined(int resamples) {
  return Str("the coefficient is undefined in all ", resamples, " resamples");
}

// The intervals of several coefficients of y on x over one set of resamples.
std::vector<BootstrapInterval> BootstrapCoefficients(const std::vector<Coefficient>& coefficients,
                                                     const std::vector<double>& x, const std::vector<double>& y,
                                                     const BootstrapOptions& options, const VariableNames& names) {
  options.Validate();
  std::vector<BootstrapInterval> results;
  bool any = false;
  for (Coefficient c : coefficients) {
    BootstrapInterval r;
    r.estimate = Correlation(c, x, y, names);
    r.resamples = options.resamples;
    r.confidence = options.confidence;
    r.seed = options.seed;
    r.detail = r.estimate.detail;
    any = any || r.estimate.ok();
    results.push_back(r);
  }
  if (!any) return results;

  std::vector<std::vector<double>> samples(coefficients.size());  // [coefficient][used resample]
  Resampler resampler(x.size(), options.seed);
  std::vector<size_t> indices;
  for (int b = 0; b < options.resamples; ++b) {
    resampler.Next(&indices);
    const std::vector<double> bx = Gather(x, indices), by = Gather(y, indices);
    for (size_t k = 0; k < coefficients.size(); ++k) {
      if (!results[k].estimate.ok()) continue;
      Stat s = Correlation(coefficients[k], bx, by, names);
      if (s.ok()) samples[k].push_back(*s.value);
    }
  }
  for (size_t k = 0; k < results.size(); ++k) {
    BootstrapInterval& r = results[k];
    if (!r.estimate.ok()) continue;
    r.used = int(samples[k].size());
    r.dropped = r.resamples - r.used;
    if (r.used == 0) {
      r.detail = NoResampleDefined(r.resamples);
    } else {
      PercentileInterval(samples[k], options.confidence, &r.lo, &r.hi);
    }
  }
  return results;
}

}  // namespace

void BootstrapOptions::Validate() const {
  PC_CHECK(resamples >= 1, "bootstrap: resamples must be >= 1 (got ", resamples, ")");
  PC_CHECK(confidence > 0 && confidence < 1, "bootstrap: confidence must lie in (0, 1) (got ", confidence, ")");
}

Resampler::Resampler(size_t n, uint64_t seed)
    : n_(n), reject_below_(n == 0 ? 0 : (uint64_t(0) - uint64_t(n)) % uint64_t(n)), engine_(seed) {
  PC_ASSERT(n > 0, "resampling zero runs");
}

void Resampler::Next(std::vector<size_t>* indices) {
  indices->resize(n_);
  for (size_t i = 0; i < n_; ++i) {
    uint64_t w = engine_();
    while (w < reject_below_) w = engine_();
    (*indices)[i] = size_t(w % uint64_t(n_));
  }
}

BootstrapInterval BootstrapCorrelation(Coefficient c, const std::vector<double>& x, const std::vector<double>& y,
                                       const BootstrapOptions& options, const VariableNames& names) {
  return BootstrapCoefficients({c}, x, y, options, names).front();
}

std::vector<BootstrapInterval> BootstrapCorrelations(const std::vector<double>& x, const std::vector<double>& y,
                                                     const BootstrapOptions& options, const VariableNames& names) {
  return BootstrapCoefficients({kAllCoefficients.begin(), kAllCoefficients.end()}, x, y, options, names);
}

BootstrapDifference BootstrapCorrelationDifference(const std::vector<double>& a, const std::vector<double>& b,
                                                   const std::vector<double>& outcome, const DifferenceSpec& spec,
                                                   const BootstrapOptions& options) {
  options.Validate();
  PC_CHECK(a.size() == b.size(), "difference of correlations: ", spec.a_name, " has ", a.size(), " values but ",
           spec.b_name, " has ", b.size(), " (one value per run expected in both)");
  const VariableNames names_a{spec.a_name, spec.outcome_name}, names_b{spec.b_name, spec.outcome_name};
  // d on the given runs, or the Stat that says why the coefficient of A or B is undefined.
  auto difference = [&](const std::vector<double>& va, const std::vector<double>& vb,
                        const std::vector<double>& vy) -> Stat {
    const Stat sa = Correlation(spec.coefficient, va, vy, names_a);
    const Stat sb = Correlation(spec.coefficient, vb, vy, names_b);
    if (!sa.ok()) return sa;
    if (!sb.ok()) return sb;
    return Stat::Of(Strength(*sa.value, spec.compare, spec.a, spec.outcome) -
                    Strength(*sb.value, spec.compare, spec.b, spec.outcome));
  };

  BootstrapDifference r;
  r.resamples = options.resamples;
  r.confidence = options.confidence;
  r.seed = options.seed;
  r.estimate = difference(a, b, outcome);
  if (!r.estimate.ok()) {
    r.detail = r.estimate.detail;
    return r;
  }
  Resampler resampler(a.size(), options.seed);
  std::vector<size_t> indices;
  int positive = 0;
  for (int k = 0; k < options.resamples; ++k) {
    resampler.Next(&indices);
    const Stat d = difference(Gather(a, indices), Gather(b, indices), Gather(outcome, indices));
    if (!d.ok()) continue;
    r.samples.push_back(*d.value);
    if (*d.value > 0) ++positive;
  }
  r.used = int(r.samples.size());
  r.dropped = r.resamples - r.used;
  if (r.used == 0) {
    r.detail = NoResampleDefined(r.resamples);
    return r;
  }
  r.share_positive = double(positive) / double(r.used);
  std::vector<double> sorted = r.samples;
  PercentileInterval(sorted, options.confidence, &r.lo, &r.hi);
  return r;
}

std::vector<GroupLeftOut> LeaveOneGroupOut(Coefficient c, const std::vector<double>& x, const std::vector<double>& y,
                                           const std::vector<std::string>& groups, const VariableNames& names) {
  PC_CHECK(groups.size() == x.size(), "leave-one-group-out: ", groups.size(), " group names for ", x.size(),
           " runs (one group per run expected)");
  PC_CHECK(x.size() == y.size(), "leave-one-group-out: ", names.x, " has ", x.size(), " values but ", names.y,
           " has ", y.size(), " (one value per run expected in both)");
  std::vector<std::string> distinct;
  for (const std::string& g : groups) {
    if (std::find(distinct.begin(), distinct.end(), g) == distinct.end()) distinct.push_back(g);
  }
  std::vector<GroupLeftOut> out;
  for (const std::string& g : distinct) {
    std::vector<double> kx, ky;
    for (size_t i = 0; i < groups.size(); ++i) {
      if (groups[i] == g) continue;
      kx.push_back(x[i]);
      ky.push_back(y[i]);
    }
    GroupLeftOut r;
    r.group = g;
    r.remaining = kx.size();
    r.left_out = groups.size() - kx.size();
    r.value = Correlation(c, kx, ky, names);
    out.push_back(r);
  }
  return out;
}

}  // namespace pc::reports
