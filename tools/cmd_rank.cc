// perpcomp rank results.h5 --out DIR: which error metric predicts downstream loss across a sweep's runs, and
// which run wins (docs/RANKING.md). Reads a sweep-results file, or with --tables DIR ... the tables of earlier
// reports (reports/rank_tables.h), correlates every predictor with every outcome (bootstrap intervals over
// runs), writes DIR/report.html, report.md, CSVs and rank_inputs.json (staged), prints the headline.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <utility>

#include "core/error.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/strings.h"
#include "core/threads.h"
#include "reports/predictors.h"
#include "reports/rank_tables.h"
#include "reports/ranking_analysis.h"
#include "reports/ranking_report.h"
#include "reports/run_selection.h"
#include "reports/sweep_results.h"
#include "store/file.h"
#include "tools/cli.h"

namespace pc::cli {
namespace {

// The arguments as a shell would need them (recorded in the report's conventions).
std::string CommandLine(const std::vector<std::string>& args) {
  std::string out = "perpcomp rank";
  for (const std::string& a : args) {
    const bool plain = !a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                                         "-_./=:,+@") == std::string::npos;
    out += " " + (plain ? a : "'" + ReplaceAll(a, "'", "'\\''") + "'");
  }
  return out;
}

void PrintPredictors(const std::vector<reports::PredictorInfo>& predictors, const std::vector<std::string>& left_out) {
  for (const auto& p : predictors) std::printf("%s\t%s\n", p.name.c_str(), p.description.c_str());
  for (const auto& note : left_out) std::printf("# not available: %s\n", note.c_str());
}

void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream f(path, std::ios::binary);
  f << content;
  f.close();
  PC_CHECK(f.good(), "cannot write '", path, "'");
}

}  // namespace

int RunRank(const std::vector<std::string>& args) {
  CommonOptions common;
  std::string results_path, out_dir, coefficient = "spearman", primary, runs;
  std::vector<std::string> tables;
  reports::RankOptions options;
  uint64_t seed = 0;
  int resamples = 2000, held_out_splits = 200;
  bool overwrite = false, list_predictors = false, list_outcomes = false;
  po::options_description desc("options");
  desc.add_options()
    ("results", po::value<std::string>(&results_path), "sweep-results file (perpcomp sweep / merge)")
    ("tables", po::value<std::vector<std::string>>(&tables)->composing(),
     "instead of a results file: a folder an earlier perpcomp rank --out wrote; repeat to join several "
     "(docs/RANKING.md \"Ranking from saved tables\")")
    ("out", po::value<std::string>(&out_dir), "output folder: report.html, report.md, CSVs (staged)")
    ("outcome", po::value<std::string>(&options.outcome)->default_value("delta_nll"),
     "downstream score to rank runs by and to headline (see --list-outcomes)")
    ("predictors", po::value<std::string>(&options.predictors),
     "comma-separated globs of predictor names; !GLOB excludes (default: all; see --list-predictors)")
    ("coefficient", po::value<std::string>(&coefficient)->default_value("spearman"),
     "coefficient of the headline, the best predictor and perp-vs-iso: pearson, pearson_log, spearman, kendall_tau_b")
    ("bootstrap", po::value<int>(&resamples)->default_value(2000), "bootstrap resamples B")
    ("seed", po::value<uint64_t>(&seed)->default_value(0), "bootstrap seed (recorded in the report)")
    ("primary", po::value<std::string>(&primary),
     "the primary comparisons PERP:ISO,... (predictor names; default: the sweep file's, else the block outputs and the "
     "paper-frame updates, docs/RANKING.md)")
    ("runs", po::value<std::string>(&runs),
     "rank only the runs that meet every comma-separated term: family=A|B (quantization, pruning or a method "
     "family), OUTCOME<X / <= / > / >= (such as delta_nll<0.1; docs/RANKING.md \"Selecting runs\")")
    ("held-out-splits", po::value<int>(&held_out_splits)->default_value(200),
     "random half splits of the exploratory best-of-many check (0: none)")
    ("list-predictors", po::bool_switch(&list_predictors),
     "print the predictors (those available in the results file or the tables when given) and exit")
    ("list-outcomes", po::bool_switch(&list_outcomes), "print the outcomes of the results file or the tables and exit")
    ("overwrite", po::bool_switch(&overwrite), "replace an existing --out folder");
  AddCommonOptions(desc, common);
  po::positional_options_description positional;
  positional.add("results", 1);
  po::variables_map vm;
  if (!Parse("rank",
             "(results.h5 | --tables DIR [--tables DIR ...]) --out DIR [--outcome NAME] [--predictors GLOBS] "
             "[--seed S] [--bootstrap B]",
             desc, args, vm, &positional, &common)) {
    return 0;
  }
  PC_CHECK(held_out_splits >= 0, "--held-out-splits must not be negative, got ", held_out_splits);
  options.held_out_splits = static_cast<size_t>(held_out_splits);
  for (const std::string& pair : primary.empty() ? std::vector<std::string>{} : Split(primary, ',')) {
    const std::vector<std::string> two = Split(Trim(pair), ':');
    PC_CHECK(two.size() == 2 && !two[0].empty() && !two[1].empty(), "--primary '", primary,
             "': expected PERP:ISO pairs separated by commas, got '", pair, "'");
    for (const std::string& name : two) {
      PC_CHECK(reports::FindPredictor(name) != nullptr, "--primary: '", name,
               "' is not a predictor (see --list-predictors)");
    }
    options.primary.emplace_back(two[0], two[1]);
  }
  options.bootstrap.resamples = resamples;
  options.bootstrap.seed = seed;
  options.coefficient = reports::ParseCoefficient(coefficient, "--coefficient");
  options.threads = common.threads;  // checked by Parse (1 .. cores)
  options.Validate();

  PC_CHECK(results_path.empty() || tables.empty(), "rank: a results file (", results_path,
           ") and --tables are mutually exclusive: rank one results file, or the tables of earlier reports");
  if (list_predictors && results_path.empty() && tables.empty()) {
    PrintPredictors(reports::SelectPredictors(reports::PredictorCatalogue(), options.predictors), {});
    return 0;
  }
  PC_CHECK(!results_path.empty() || !tables.empty(),
           "rank: no results file given and no --tables (usage: perpcomp rank results.h5 --out DIR, or perpcomp rank "
           "--tables DIR [--tables DIR ...] --out DIR)");
  if (!list_predictors && !list_outcomes) {
    PC_CHECK(!out_dir.empty(), "rank: --out DIR is required (the report's folder)");
    fs::CheckOutputPath(out_dir, overwrite, "--out", fs::OutputKind::kFolder);
    std::vector<std::pair<std::string, std::string>> inputs = {{"the results file", results_path}};
    for (const std::string& t : tables) inputs.push_back({"--tables", t});
    fs::CheckNotAnInput(out_dir, "--out", inputs);
  }

  reports::SweepResults results =
      tables.empty() ? reports::ReadSweepResults(results_path) : reports::ReadRankTables(tables, options);
  const std::vector<std::string> unchecked = reports::UncheckedFolders(results);
  if (!unchecked.empty()) {
    log::Warn("rank", reports::UncheckedNote(unchecked));
  }
  for (const reports::TablesFolder& f : results.tables) {
    if (!f.ignored.empty()) {
      log::Info("rank", f.path, ": ", f.ignored.size(), " columns name no predictor or outcome of this perpcomp and "
                "are ignored (", Join(f.ignored, ", "), ")");
    }
  }
  if (vm.count("runs")) results = reports::SelectRuns(std::move(results), runs);
  if (list_predictors) {
    const auto m = reports::ExtractPredictors(results, reports::SelectPredictors(reports::PredictorCatalogue(), options.predictors));
    PrintPredictors(m.predictors, m.left_out);
    return 0;
  }
  if (list_outcomes) {
    const reports::OutcomeMatrix m = reports::ExtractOutcomes(results);
    for (size_t o = 0; o < m.outcomes.size(); ++o) {
      std::printf("%s\t%zu runs\t%s\n", m.outcomes[o].name.c_str(), m.RunsWith(o).size(), m.outcomes[o].description.c_str());
    }
    return 0;
  }
  log::Info("rank", results.path, ": ", results.runs.size(), " runs",
            results.selection.empty() ? "" : Str(" of ", results.runs_in_file, " (--runs)"), "; bootstrap ",
            options.bootstrap.resamples, " resamples, seed ", options.bootstrap.seed, ", ", options.threads, " threads");

  const reports::RankingAnalysis analysis = reports::AnalyzeSweep(results, options);
  if (!analysis.predictors.left_out.empty()) {
    log::Info("rank", analysis.predictors.left_out.size(), " selected predictors are not in every run and were left out (",
              analysis.predictors.left_out.front(), (analysis.predictors.left_out.size() > 1 ? ", ..." : ""), ")");
  }
  const reports::RankReport report = reports::BuildRankReport(results, analysis, {CommandLine(args), store::CreatedBy()});

  fs::StagedDir staged(out_dir, overwrite, "--out");
  for (const reports::ReportFile& f : report.files) WriteFile(fs::Join(staged.path(), f.name), f.content);
  staged.Commit();

  std::printf("%s", report.headline.c_str());
  const size_t csv_files = size_t(std::count_if(report.files.begin(), report.files.end(),
                                                 [](const reports::ReportFile& f) { return EndsWith(f.name, ".csv"); }));
  std::printf("report: %s (%zu tables, %zu figures; report.md and %zu CSV files beside it)\n",
              fs::Join(out_dir, "report.html").c_str(), report.html_tables, report.html_figures, csv_files);
  return 0;
}

}  // namespace pc::cli
