// reports/rank_tables.h — `perpcomp rank --tables DIR [--tables DIR ...]`: the runs of earlier report folders
// joined into one analysis (docs/RANKING.md "Ranking from saved tables"), and rank_inputs.json, what every report
// folder records so that a later join is checked.
//
// A folder is what `perpcomp rank --out DIR` wrote. Read from it:
//   runs.csv              index, run, method, family (required), recipe, params, calibration, seconds: the runs'
//                         order (by index, then by name, as in a results file) and what the report shows of them
//   predictor_values.csv  run, then one column per predictor (17 significant digits; an empty cell or nan = NaN)
//   outcome_values.csv    run, then one column per outcome (an empty cell: the run lacks it; nan: not finite)
//   rank_inputs.json      when present: checked against the other folders' (a folder without it, written before
//                         rank recorded it, is accepted: UncheckedFolders lists it)
// Columns that name no predictor (FindPredictor) or outcome (DescribeOutcome) of this version are ignored
// (TablesFolder::ignored). The runs become SweepRuns with their saved values (SweepRun::saved), so selection
// (--runs), the listings and the statistics run on the same code as for a results file.
//
// rank_inputs.json, one JSON object:
//   "format": "perpcomp-rank-inputs", "version": 1, "runs": N (the runs ranked)
//   "sweeps": [name, ...]                           the sweeps the runs came from
//   "primary_comparisons": [[perp, iso], ...]       the primary comparisons in effect
//   "conventions_key": "…", "conventions": {…}      the results file's (absent when not known)
//   "reference": {"mean_nll", "ppl", "pairs_accuracy"}   the reference's scores that are known
//   "measure": {"text_sha256": […], "seq_len": […], "windows": […]}   the runs' distinct measure settings
//   "unchecked": [folder, ...]                      folders joined without a rank_inputs.json
// A join refuses folders whose conventions (but for "calib", which each run records: runs.csv's calibration),
// reference mean NLL (relative difference > 1e-6) or measure settings differ, naming both folders and the field;
// without --primary, their primary comparisons must agree. Where "calib" differs, the joined conventions say so in
// its place; the joined conventions_key is the first folder's.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "reports/ranking_analysis.h"
#include "reports/sweep_results.h"

namespace pc::reports {

// What rank_inputs.json holds (see above). Unknown values are empty or NaN.
struct RankInputs {
  size_t runs = 0;
  std::vector<std::string> sweeps;
  std::vector<std::pair<std::string, std::string>> primary;
  std::string conventions_key, conventions;  // conventions: a JSON text
  double reference_mean_nll = std::numeric_limits<double>::quiet_NaN();
  double reference_ppl = std::numeric_limits<double>::quiet_NaN();
  double reference_pairs_accuracy = std::numeric_limits<double>::quiet_NaN();
  std::vector<std::string> text_sha256;   // sorted, distinct
  std::vector<int64_t> seq_len, windows;  // sorted, distinct
  std::vector<std::string> unchecked;
};

// What a ranking records about its inputs (the primary comparisons in effect are the analysis').
RankInputs RankInputsOf(const SweepResults& results, const RankingAnalysis& analysis);
std::string RankInputsJson(const RankInputs& inputs);
// Errors name `path` and the field.
RankInputs ParseRankInputs(const std::string& text, const std::string& path);

// Reads and joins the folders (see the top of this file). `options.primary` non-empty: the folders' recorded
// primary comparisons need not agree (--primary replaces them). Errors name the file, the line and the column.
SweepResults ReadRankTables(const std::vector<std::string>& folders, const RankOptions& options);

}  // namespace pc::reports
