// reports/ranking_report.h — the files of `perpcomp rank --out DIR` (docs/RANKING.md "The report"):
//   report.html   one self-contained page (inline CSS and SVG; no scripts, no external resources): the headline,
//                 the ranking of runs, the correlation tables with intervals, scatter plots with fitted lines,
//                 ρ(perp) − ρ(iso) with its bootstrap distribution, leave-one-family-out tables, per-layer
//                 profiles of each run, the runs and every convention behind the numbers
//   report.md     the same tables in Markdown (no figures)
//   <table>.csv   one CSV per table of the page, plus the full data: correlations.csv (every predictor,
//                 outcome and coefficient), differences.csv, difference_samples.csv, predictor_values.csv,
//                 outcome_values.csv, ranking_all_predictors.csv, predictors.csv
//   rank_inputs.json   what a later join of report folders checks (reports/rank_tables.h)
// Runs read from saved tables (--tables) have no measure tables or records: the per-layer profiles and
// runs_full.csv are left out, and what the tables lack says "not in the tables".
// Rendering only: the numbers come from ranking_analysis.h. Writing the files (staged) is the caller's job.
#pragma once

#include <string>
#include <vector>

#include "reports/ranking_analysis.h"
#include "reports/sweep_results.h"

namespace pc::reports {

struct ReportFile {
  std::string name;  // relative to the output folder
  std::string content;
};

struct RankReport {
  std::vector<ReportFile> files;
  std::string headline;     // Headline(): printed on the terminal, first in the page
  size_t html_tables = 0;   // <table> elements in report.html
  size_t html_figures = 0;  // <svg> elements in report.html
};

struct ReportInputs {
  std::string command_line;  // how rank was invoked (recorded in the conventions)
  std::string version;       // "perpcomp 0.1.0"
};

RankReport BuildRankReport(const SweepResults& results, const RankingAnalysis& analysis, const ReportInputs& inputs);

}  // namespace pc::reports
