// reports/bootstrap.h — bootstrap confidence intervals over runs, the paired bootstrap of a difference
// of correlations, and leave-one-group-out stability (docs/RANKING.md).
//
// Resampling scheme (reproducible for a seed on any machine and compiler; the standard fixes
// std::mt19937_64's output, and no std:: distribution is used):
//   one std::mt19937_64 engine, seeded once with `seed`; for resample b = 0 .. B−1, for position
//   i = 0 .. n−1: draw 64-bit words w until w >= (2^64 mod n), and take index w mod n (rejection
//   sampling, so every run is equally likely). Resample b is the runs at those n indices.
// The indices depend only on (n, seed), so intervals of different coefficients, predictors and outcomes
// computed with one seed use the same resamples.
//
// Interval: the percentile interval — the (1−c)/2 and (1+c)/2 quantiles (type 7, linear interpolation,
// numpy.percentile's default) of the coefficient over the resamples where it is defined. Resamples
// where it is undefined (a resample that repeats runs until a variable is constant) are dropped and
// counted in `dropped`.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "reports/stats.h"

namespace pc::reports {

struct BootstrapOptions {
  int resamples = 2000;     // B (docs/RANKING.md)
  uint64_t seed = 0;        // recorded in every result and report
  double confidence = 0.95;
  void Validate() const;    // throws pc::Error naming the bad field
};

// The index sequence of the scheme above.
class Resampler {
 public:
  Resampler(size_t n, uint64_t seed);
  // Fills `indices` with the next resample's n indices.
  void Next(std::vector<size_t>* indices);

 private:
  size_t n_;
  uint64_t reject_below_;  // 2^64 mod n
  std::mt19937_64 engine_;
};

struct BootstrapInterval {
  Stat estimate;                 // the coefficient on all runs
  std::optional<double> lo, hi;  // the percentile interval; empty when estimate is not a number or no
                                 // resample was defined (then `detail` says why)
  int resamples = 0;             // B
  int used = 0;                  // resamples where the coefficient was defined
  int dropped = 0;               // B − used
  double confidence = 0.95;
  uint64_t seed = 0;
  std::string detail;
  bool has_interval() const { return lo.has_value(); }
};

// The coefficient of y on x with its bootstrap interval.
BootstrapInterval BootstrapCorrelation(Coefficient c, const std::vector<double>& x, const std::vector<double>& y,
                                       const BootstrapOptions& options, const VariableNames& names = {});
// All four coefficients over the same resamples, in the order of kAllCoefficients.
std::vector<BootstrapInterval> BootstrapCorrelations(const std::vector<double>& x, const std::vector<double>& y,
                                                     const BootstrapOptions& options, const VariableNames& names = {});

// How two predictors A and B are compared against one outcome.
struct DifferenceSpec {
  Coefficient coefficient = Coefficient::kSpearman;
  Orientation a = Orientation::kHigherIsWorse;
  Orientation b = Orientation::kHigherIsWorse;
  Orientation outcome = Orientation::kHigherIsWorse;
  Compare compare = Compare::kOriented;
  std::string a_name = "A", b_name = "B", outcome_name = "outcome";  // for the detail texts
};

// Paired bootstrap of d = Strength(ρ(A, outcome)) − Strength(ρ(B, outcome)) (see stats.h; with
// both predictors kHigherIsWorse and Compare::kOriented this is ρ(A) − ρ(B), e.g. ρ(perp) − ρ(iso)).
// Both coefficients of a resample use the same runs; a resample where either is undefined is dropped.
struct BootstrapDifference {
  Stat estimate;                          // d on all runs
  std::optional<double> lo, hi;           // percentile interval of d
  std::optional<double> share_positive;   // share of used resamples with d > 0
  std::vector<double> samples;            // d of every used resample, in resample order (histograms)
  int resamples = 0, used = 0, dropped = 0;
  double confidence = 0.95;
  uint64_t seed = 0;
  std::string detail;
  bool has_interval() const { return lo.has_value(); }
};
BootstrapDifference BootstrapCorrelationDifference(const std::vector<double>& a, const std::vector<double>& b,
                                                   const std::vector<double>& outcome, const DifferenceSpec& spec,
                                                   const BootstrapOptions& options);

// The coefficient recomputed with each group (method family) left out. `groups[i]` is run i's group;
// groups are reported in order of first appearance.
struct GroupLeftOut {
  std::string group;
  size_t left_out = 0;   // runs of this group
  size_t remaining = 0;  // runs the coefficient was computed on
  Stat value;
};
std::vector<GroupLeftOut> LeaveOneGroupOut(Coefficient c, const std::vector<double>& x, const std::vector<double>& y,
                                           const std::vector<std::string>& groups, const VariableNames& names = {});

}  // namespace pc::reports
