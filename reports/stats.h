// reports/stats.h — correlation coefficients, ranks and least-squares lines over runs
// (docs/RANKING.md, docs/METRICS.md).
//
// Every coefficient returns a Stat: a number, or the reason it is not one.
//   "insufficient": fewer than kMinObservations (5) observations; docs/RANKING.md: such a correlation is
//                   reported as insufficient, never as a number.
//   "n/a":          the coefficient is undefined for this input: a constant variable, a non-finite value,
//                   or (log form only) a value <= 0.
// The formulas are those of scipy.stats (pearsonr, spearmanr, kendalltau(variant='b')); the tests compare
// against scipy to 1e-12 relative.
//
// Sign convention. A coefficient is computed on the values as given. Which sign is "good" depends on
// the variables: an error metric (iso, par, perp) rises with damage, a cosine falls with it; a loss
// delta rises with damage, an accuracy falls with it. Orientation records this per variable, and
// Oriented(ρ, predictor, outcome) turns ρ so that a positive value always means "the predictor orders
// runs the way the damage does" — the number to compare predictors by (Compare::kOriented). Comparing
// by |ρ| (Compare::kAbsolute) ignores the direction; a predictor that is strongly wrong-way then
// counts as strong.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace pc::reports {

// A correlation over fewer runs than this is "insufficient" (docs/RANKING.md).
inline constexpr size_t kMinObservations = 5;
inline constexpr const char* kInsufficient = "insufficient";
inline constexpr const char* kNotApplicable = "n/a";

// A number, or why there is none.
struct Stat {
  std::optional<double> value;
  std::string reason;  // "" with a value; else kInsufficient or kNotApplicable
  std::string detail;  // the longer why: "x is constant", "4 observations, need at least 5"

  bool ok() const { return value.has_value(); }
  static Stat Of(double v) { return Stat{v, "", ""}; }
  static Stat Insufficient(std::string detail) { return Stat{std::nullopt, kInsufficient, std::move(detail)}; }
  static Stat NotApplicable(std::string detail) { return Stat{std::nullopt, kNotApplicable, std::move(detail)}; }
};

enum class Coefficient {
  kPearson,     // Pearson r on the raw values
  kPearsonLog,  // Pearson r on log(x), log(y); n/a unless every value of both is > 0
  kSpearman,    // Pearson r on average ranks (ties share their mean rank)
  kKendallTauB  // Kendall τ-b (ties in x and in y corrected)
};
inline constexpr std::array<Coefficient, 4> kAllCoefficients = {
    Coefficient::kPearson, Coefficient::kPearsonLog, Coefficient::kSpearman, Coefficient::kKendallTauB};

// "pearson", "pearson_log", "spearman", "kendall_tau_b" (CSV columns, CLI values).
std::string CoefficientKey(Coefficient c);
// "Pearson r", "Pearson r (log)", "Spearman ρ", "Kendall τ-b" (report headings; UTF-8).
std::string CoefficientTitle(Coefficient c);
// Inverse of CoefficientKey; the error names `what` and lists the supported keys.
Coefficient ParseCoefficient(const std::string& key, const std::string& what);

// How a variable relates to damage (see the sign convention above).
enum class Orientation {
  kHigherIsWorse,  // errors, loss deltas, KL, accuracy drops
  kHigherIsBetter  // cosine similarity, accuracy
};
// ρ · s(predictor) · s(outcome), s = +1 for kHigherIsWorse and −1 for kHigherIsBetter: > 0 when the
// predictor orders runs the way the damage does.
double Oriented(double rho, Orientation predictor, Orientation outcome);
// How predictors are compared: by the oriented coefficient (a wrong-way predictor is bad), or by |ρ|.
enum class Compare { kOriented, kAbsolute };
double Strength(double rho, Compare compare, Orientation predictor, Orientation outcome);

// Names used in the `detail` texts ("x is constant" -> "perp_mean is constant").
struct VariableNames {
  std::string x = "x";
  std::string y = "y";
};

// The coefficient of y on x. x and y must have the same length (else pc::Error naming both lengths).
// Checks, in this order: fewer than kMinObservations -> insufficient; a NaN or infinite value -> n/a;
// (log form) a value <= 0 -> n/a; a constant variable -> n/a.
Stat Correlation(Coefficient c, const std::vector<double>& x, const std::vector<double>& y,
                 const VariableNames& names = {});
Stat Pearson(const std::vector<double>& x, const std::vector<double>& y, const VariableNames& names = {});
Stat PearsonLog(const std::vector<double>& x, const std::vector<double>& y, const VariableNames& names = {});
Stat Spearman(const std::vector<double>& x, const std::vector<double>& y, const VariableNames& names = {});
Stat KendallTauB(const std::vector<double>& x, const std::vector<double>& y, const VariableNames& names = {});

// Sorts v[lo, hi) ascending by merging (tmp: scratch of v's size) and returns the number of pairs
// i < j with v[i] > v[j]: the discordant pairs of Kendall's τ once x is sorted.
int64_t MergeCountInversions(std::vector<double>& v, std::vector<double>& tmp, size_t lo, size_t hi);

// 1-based ranks, ascending; tied values share the mean of their ranks ("average" in scipy.stats.rankdata).
// Values must be finite (else pc::Error naming the index).
std::vector<double> AverageRanks(const std::vector<double>& values);
// Ranks by damage: rank 1 = least damage (the lowest value for kHigherIsWorse, the highest for
// kHigherIsBetter); ties share the mean rank.
std::vector<double> DamageRanks(const std::vector<double>& values, Orientation orientation);
// Indices of `values`, least damage first; ties keep their input order.
std::vector<size_t> OrderByDamage(const std::vector<double>& values, Orientation orientation);

// y = intercept + slope * x, by least squares over the pairs where both values are finite.
struct Line {
  double intercept = 0;
  double slope = 0;
  double At(double x) const { return intercept + slope * x; }
};
// Empty when fewer than 2 finite pairs or x is constant over them.
std::optional<Line> FitLine(const std::vector<double>& x, const std::vector<double>& y);

// The q-quantile (0 <= q <= 1) of sorted values by linear interpolation between order statistics
// (Hyndman–Fan type 7, numpy.percentile's default). `sorted` must be ascending and non-empty.
double QuantileSorted(const std::vector<double>& sorted, double q);

}  // namespace pc::reports
