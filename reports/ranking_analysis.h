// reports/ranking_analysis.h — the statistics of `perpcomp rank` (docs/RANKING.md,
// docs/METRICS.md, docs/RANKING.md): every selected predictor against every outcome with four
// coefficients and bootstrap intervals, the paired bootstrap of ρ(perp) − ρ(iso) (overall and with each method
// family left out), the best predictor, and the ranking of runs by the chosen outcome.
// Pure computation on data read by sweep_results.h, or by rank_tables.h from the tables of earlier reports (the
// same path: the runs then carry their saved values); no files are written here (ranking_report.h renders).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "reports/bootstrap.h"
#include "reports/outcomes.h"
#include "reports/predictors.h"
#include "reports/sweep_results.h"

namespace pc::reports {

struct RankOptions {
  BootstrapOptions bootstrap;  // --bootstrap B (2000), --seed (0)
  Coefficient coefficient =
      Coefficient::kSpearman;         // --coefficient: the headline, the best predictor, ρ(perp) − ρ(iso)
  std::string outcome = "delta_nll";  // --outcome: the ranking, the headline, the scatter plots
  std::string predictors;             // --predictors patterns ("" = all)
  int threads = 1;                    // worker threads for the bootstrap (results do not depend on it)
  // The primary comparisons ρ(perp) − ρ(iso), declared before looking (--primary PERP:ISO,...):
  // empty: the results file's `primary_comparisons` (from the sweep file), else MainDifferencePairs().
  std::vector<std::pair<std::string, std::string>> primary;
  size_t held_out_splits = 200;       // split-half repetitions of the exploratory best-of-many check
  void Validate() const;              // errors name the option
};

// One (predictor, outcome): the four coefficients (kAllCoefficients order) over the runs that have the outcome.
struct CorrelationCell {
  size_t n = 0;
  std::vector<BootstrapInterval> by_coefficient;
  const BootstrapInterval& at(Coefficient c) const;
};

// ρ(perp) − ρ(iso) for one pair of sibling predictors against the chosen outcome.
struct FamilyLeftOut {
  std::string family;
  size_t left_out = 0, remaining = 0;
  BootstrapDifference difference;
};
struct DifferenceResult {
  std::string perp, iso;  // predictor names
  BootstrapDifference all;
  std::vector<FamilyLeftOut> by_family;  // only for the main pairs
};

// The honest check of the best-of-many predictor: on each of `splits` random halves of the runs
// (seeded), the predictor with the strongest chosen coefficient is picked on one half and its
// strength (oriented coefficient; |ρ| for signed predictors) computed on the other half.
struct HeldOutCheck {
  size_t splits = 0, half = 0;   // repetitions; runs in the selection half
  std::vector<double> held_out;  // the chosen predictor's strength on the held-out half (defined ones)
  double median = 0, q10 = 0, q90 = 0;
  double in_sample_median = 0;    // its strength on the selection half (the optimistic number)
  size_t same_as_best = 0;        // splits that chose the full-sample best predictor
  std::string detail;             // why not computed ("" when computed)
};

struct RankingAnalysis {
  RankOptions options;
  PredictorMatrix predictors;  // the selected predictors every run has
  OutcomeMatrix outcomes;
  std::vector<std::string> families;                // in order of first appearance
  size_t outcome = 0;                               // the chosen outcome (index into outcomes)
  std::vector<size_t> main;                         // indices of the main predictors present (MainPredictorNames order)
  std::vector<std::vector<CorrelationCell>> cells;  // [outcome][predictor]
  // The primary comparisons in effect (--primary, else the input's declared ones, else MainDifferencePairs()),
  // also those whose predictors the runs lack.
  std::vector<std::pair<std::string, std::string>> primary;
  std::vector<DifferenceResult> differences;        // the main pairs first, then every other perp/iso pair
  size_t main_differences = 0;                      // how many of `differences` are main pairs
  // ρ (the chosen coefficient, chosen outcome) of each main predictor with each family left out ([main][family]).
  std::vector<std::vector<GroupLeftOut>> main_left_out;
  std::optional<size_t> best;  // the predictor with the strongest chosen coefficient (empty: none defined)
  HeldOutCheck held_out;       // the exploratory best-of-many, checked on held-out halves
  std::vector<size_t> order;   // runs, least damage first by the chosen outcome; runs without it last

  const CorrelationCell& Cell(size_t outcome_index, size_t predictor) const {
    return cells.at(outcome_index).at(predictor);
  }
  // Strength of a cell's chosen coefficient (Oriented, or |ρ| for signed predictors); nullopt when undefined.
  std::optional<double> Strength(size_t outcome_index, size_t predictor) const;
  // Predictor indices by decreasing strength for the chosen outcome (undefined ones last, catalogue order).
  std::vector<size_t> ByStrength() const;
  // Index of a predictor by name, or nullopt.
  std::optional<size_t> FindPredictor(const std::string& name) const;
};

RankingAnalysis AnalyzeSweep(const SweepResults& results, const RankOptions& options);

// The damage ranks of a predictor's values (1 = least damage; ties share the mean rank; signed predictors by
// |v − centre|). Non-finite values get NaN and are left out of the ranking.
std::vector<double> PredictorDamageRanks(const PredictorInfo& p, const std::vector<double>& values);

// The terminal headline (a few lines): the runs (for saved tables: how many from which folder, and the folders
// whose settings could not be checked), the primary comparisons worded by what the interval of the difference
// shows, then the exploratory best predictor.
std::string Headline(const SweepResults& results, const RankingAnalysis& analysis);

// Saved tables: the folders whose settings could not be checked (no rank_inputs.json), also those recorded as
// unchecked by a folder's own rank_inputs.json ("DIR (joined into DIR2)"). Empty for a results file.
std::vector<std::string> UncheckedFolders(const SweepResults& results);
// The sentence that names those folders, for the log and the headline.
std::string UncheckedNote(const std::vector<std::string>& unchecked);

}  // namespace pc::reports
