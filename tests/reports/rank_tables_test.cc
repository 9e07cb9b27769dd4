// `perpcomp rank --tables` in the library (reports/rank_tables.h) on report folders written from synthetic
// sweep-results files (tests/reports/sweep_fixture.h): a folder ranks to the numbers of its results file, two
// folders split by --runs join to the numbers of all runs at once, and the refusals (a run in two folders,
// different conventions, reference or primary comparisons, malformed CSV files) name the file, line and column.
// A folder without rank_inputs.json (written before rank recorded it) is accepted and listed as unchecked.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "core/strings.h"
#include "reports/csv.h"
#include "reports/outcomes.h"
#include "reports/rank_tables.h"
#include "reports/ranking_analysis.h"
#include "reports/ranking_report.h"
#include "reports/run_selection.h"
#include "reports/sweep_results.h"
#include "tests/reports/reports_test_support.h"
#include "tests/reports/sweep_fixture.h"
#include "tests/test_support.h"

using Catch::Matchers::Contains;
using pc::reports::RankingAnalysis;
using pc::reports::RankOptions;
using pc::reports::SweepResults;

namespace {

RankOptions Options() {
  RankOptions o;
  o.bootstrap.resamples = 200;
  o.bootstrap.seed = 7;
  o.held_out_splits = 40;
  o.predictors = "*.block_output.*,*.logits.*,weight.*,*.block_update.*";  // block_update: absent, left out
  return o;
}

std::string WriteFixture(const pc::test::SweepFixture& f, const std::string& name) {
  const std::string path = pc::test::TempDir("rank-tables") + "/" + name + ".h5";
  pc::test::WriteSweepResults(path, f);
  return path;
}

// The report's files by name.
std::map<std::string, std::string> Report(const SweepResults& s, const RankingAnalysis& a) {
  std::map<std::string, std::string> files;
  for (const auto& f : pc::reports::BuildRankReport(s, a, {"perpcomp rank test", "perpcomp test"}).files) {
    files[f.name] = f.content;
  }
  return files;
}

// Ranks `s` and writes the report's files into a new folder `name`; returns the folder.
std::string RankInto(const SweepResults& s, const std::string& name, const RankOptions& o = Options()) {
  const std::string dir = pc::test::TempDir("rank-tables") + "/" + name;
  pc::fs::MakeDirs(dir);
  for (const auto& [file, content] : Report(s, pc::reports::AnalyzeSweep(s, o))) {
    pc::test::WriteText(dir + "/" + file, content);
  }
  return dir;
}

// The files that hold the analysis' numbers and the runs: equal byte for byte when the numbers are equal.
const char* const kNumberFiles[] = {"correlations.csv",
                                    "differences.csv",
                                    "difference_samples.csv",
                                    "predictor_values.csv",
                                    "outcome_values.csv",
                                    "ranking_all_predictors.csv",
                                    "predictors.csv",
                                    "ranking.csv",
                                    "top_predictors.csv",
                                    "outcomes.csv",
                                    "perp_vs_iso.csv",
                                    "perp_vs_iso_by_site.csv",
                                    "perp_vs_iso_by_family.csv",
                                    "leave_one_family_out.csv",
                                    "runs.csv",
                                    "outcome_definitions.csv",
                                    "predictor_definitions.csv"};

void CheckSameNumbers(const std::map<std::string, std::string>& expected,
                      const std::map<std::string, std::string>& got) {
  for (const char* name : kNumberFiles) {
    INFO(name);
    REQUIRE(expected.count(name) == 1);
    REQUIRE(got.count(name) == 1);
    CHECK(expected.at(name) == got.at(name));
  }
}

// The headline without its first line (which says where the runs came from).
std::string HeadlineBody(const SweepResults& s, const RankingAnalysis& a) {
  const std::string h = pc::reports::Headline(s, a);
  return h.substr(h.find('\n'));
}

// Rewrites a CSV file of a folder through `edit` (the rows as ParseCsv reads them).
void EditCsv(const std::string& path, const std::function<void(pc::reports::CsvRecords&)>& edit) {
  pc::reports::CsvRecords csv = pc::reports::ParseCsv(pc::fs::ReadFile(path), path);
  edit(csv);
  pc::reports::TextTable t(csv.header);
  for (auto& row : csv.rows) t.AddRow(row);
  pc::test::WriteText(path, pc::reports::ToCsv(t));
}

void EditJson(const std::string& path, const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json j = nlohmann::json::parse(pc::fs::ReadFile(path));
  edit(j);
  pc::test::WriteText(path, j.dump(2));
}

// A copy of a fixture's runs under other names ("b-rtn-0"), so that two folders can be joined.
pc::test::SweepFixture Renamed(pc::test::SweepFixture f, const std::string& prefix) {
  for (auto& r : f.runs) r.name = prefix + r.name;
  return f;
}

}  // namespace

TEST_CASE("rank --tables: a report folder ranks to the numbers of its results file", "[reports][rank][tables]") {
  const SweepResults h5 = pc::reports::ReadSweepResults(WriteFixture(pc::test::DefaultFixture(12), "round"));
  const RankingAnalysis a = pc::reports::AnalyzeSweep(h5, Options());
  const std::string dir = RankInto(h5, "round");

  const SweepResults tables = pc::reports::ReadRankTables({dir}, Options());
  REQUIRE(tables.runs.size() == 12);
  CHECK(tables.runs.front().saved.has_value());
  for (size_t r = 0; r < 12; ++r) CHECK(tables.runs[r].name == h5.runs[r].name);  // index order, not ranking order
  CHECK(tables.conventions_key == h5.conventions_key);
  CHECK(tables.reference_mean_nll == h5.reference_mean_nll);
  REQUIRE(tables.tables.size() == 1);
  CHECK(tables.tables[0].checked);
  CHECK(tables.tables[0].sweeps == std::vector<std::string>{"fixture-sweep"});

  const RankingAnalysis b = pc::reports::AnalyzeSweep(tables, Options());
  // The numbers themselves, not only their text.
  REQUIRE(b.predictors.predictors.size() == a.predictors.predictors.size());
  CHECK(b.predictors.values == a.predictors.values);
  CHECK(b.outcomes.present == a.outcomes.present);
  CHECK(b.differences[0].perp == "perp.ratio.block_output.accumulated.mean");
  CHECK(*b.differences[0].all.lo == *a.differences[0].all.lo);
  CHECK(b.differences[0].all.samples == a.differences[0].all.samples);
  CHECK(*b.Cell(0, 3).at(pc::reports::Coefficient::kSpearman).hi ==
        *a.Cell(0, 3).at(pc::reports::Coefficient::kSpearman).hi);
  CHECK(b.held_out.held_out == a.held_out.held_out);
  CHECK(b.primary == a.primary);
  CHECK(b.predictors.left_out.size() ==
        a.predictors.left_out.size());  // block_update: not in the file, not in the tables
  CHECK_THAT(b.predictors.left_out.front(), Contains("not in " + dir + "/predictor_values.csv"));

  const auto from_h5 = Report(h5, a), from_tables = Report(tables, b);
  CheckSameNumbers(from_h5, from_tables);
  CHECK(HeadlineBody(tables, b) == HeadlineBody(h5, a));
  CHECK_THAT(pc::reports::Headline(tables, b), Contains("perpcomp rank: 12 runs from saved tables: " + dir +
                                                        " 12 (sweep 'fixture-sweep'); families: rtn 3, awq 3"));
  // What only the results file has is left out or said to be absent, never made up.
  CHECK(from_tables.count("runs_full.csv") == 0);
  CHECK_THAT(from_tables.at("report.md"), Contains("Not in the tables: the per-layer profiles"));
  CHECK_THAT(from_tables.at("conventions.csv"), Contains(dir + ": 12 runs; rank_inputs.json checked") &&
                                                    Contains("measured text,not in the tables") &&
                                                    Contains("seq_len,64"));
  // The folder written from the tables records the same inputs, so it can be joined again.
  const auto recorded = pc::reports::ParseRankInputs(from_tables.at("rank_inputs.json"), "x");
  const auto original = pc::reports::ParseRankInputs(from_h5.at("rank_inputs.json"), "y");
  CHECK(recorded.conventions_key == original.conventions_key);
  CHECK(recorded.primary == original.primary);
  CHECK(recorded.seq_len == std::vector<int64_t>{64});
  CHECK(recorded.text_sha256 == original.text_sha256);
  CHECK(recorded.reference_pairs_accuracy == original.reference_pairs_accuracy);
  CHECK(recorded.sweeps == original.sweeps);
  CHECK(recorded.unchecked.empty());
}

TEST_CASE("rank --tables: two folders of a split sweep join to the numbers of all runs", "[reports][rank][tables]") {
  const SweepResults all = pc::reports::ReadSweepResults(WriteFixture(pc::test::DefaultFixture(14), "split"));
  const RankingAnalysis a = pc::reports::AnalyzeSweep(all, Options());
  const std::string quant = RankInto(pc::reports::SelectRuns(all, "family=quantization"), "quant");
  const std::string prune = RankInto(pc::reports::SelectRuns(all, "family=pruning"), "prune");

  for (const auto& order : {std::vector<std::string>{quant, prune}, std::vector<std::string>{prune, quant}}) {
    const SweepResults joined = pc::reports::ReadRankTables(order, Options());
    REQUIRE(joined.runs.size() == 14);
    const RankingAnalysis b = pc::reports::AnalyzeSweep(joined, Options());
    CheckSameNumbers(Report(all, a), Report(joined, b));
    CHECK(HeadlineBody(joined, b) == HeadlineBody(all, a));
  }
  const SweepResults joined = pc::reports::ReadRankTables({quant, prune}, Options());
  CHECK_THAT(pc::reports::Headline(joined, pc::reports::AnalyzeSweep(joined, Options())),
             Contains("14 runs from saved tables: " + quant + " 8, " + prune + " 6 (sweep 'fixture-sweep')"));
  // --runs on the joined tables selects as on the file.
  const SweepResults selected = pc::reports::SelectRuns(joined, "family=awq|wanda");
  CHECK(selected.runs.size() == 7);
  CHECK_THAT(pc::reports::Headline(selected, pc::reports::AnalyzeSweep(selected, Options())),
             Contains("(selected by --runs 'family=awq|wanda': 7 of the tables' 14)"));

  SECTION("an outcome one folder has no column for is left out") {
    EditCsv(prune + "/outcome_values.csv", [](pc::reports::CsvRecords& csv) {
      const size_t c = *csv.Column("kl_p99");
      csv.header.erase(csv.header.begin() + long(c));
      for (auto& row : csv.rows) row.erase(row.begin() + long(c));
    });
    const SweepResults s = pc::reports::ReadRankTables({quant, prune}, Options());
    const pc::reports::OutcomeMatrix m = pc::reports::ExtractOutcomes(s);
    CHECK(m.outcomes.size() == a.outcomes.outcomes.size() - 1);
    CHECK(m.left_out == std::vector<std::string>{"kl_p99: not in " + prune + "/outcome_values.csv"});
    RankOptions o = Options();
    o.outcome = "kl_p99";
    CHECK_THROWS_WITH(pc::reports::AnalyzeSweep(s, o),
                      Contains("--outcome: 'kl_p99' is left out (kl_p99: not in " + prune + "/outcome_values.csv)"));
  }
  SECTION("a run in two folders") {
    const std::string again = RankInto(pc::reports::SelectRuns(all, "family=rtn"), "again");
    CHECK_THROWS_WITH(pc::reports::ReadRankTables({quant, prune, again}, Options()),
                      Contains("--tables: run 'rtn-0' is in both " + quant + " and " + again));
  }
  SECTION("different primary comparisons, unless --primary chooses") {
    RankOptions declared = Options();
    declared.primary = {{"perp.ratio.block_output.accumulated.final", "iso.ratio.block_output.accumulated.final"}};
    const SweepResults b = pc::reports::ReadSweepResults(WriteFixture(Renamed(pc::test::DefaultFixture(6), "b-"), "b"));
    const std::string other = RankInto(b, "declared", declared);
    CHECK_THROWS_WITH(pc::reports::ReadRankTables({quant, other}, Options()),
                      Contains("--tables: " + quant + " and " + other + " differ in primary_comparisons") &&
                          Contains("--primary PERP:ISO"));
    const SweepResults s = pc::reports::ReadRankTables({quant, other}, declared);
    CHECK(pc::reports::AnalyzeSweep(s, declared).main_differences == 1);
    // One folder alone: its recorded primary comparisons are the ones in effect.
    const SweepResults alone = pc::reports::ReadRankTables({other}, Options());
    CHECK(pc::reports::AnalyzeSweep(alone, Options()).primary == declared.primary);
  }
}

TEST_CASE("rank --tables: folders made under other settings are refused, naming both and the field",
          "[reports][rank][tables]") {
  const SweepResults first = pc::reports::ReadSweepResults(WriteFixture(pc::test::DefaultFixture(6), "first"));
  const std::string a = RankInto(first, "a");
  SECTION("conventions") {
    pc::test::SweepFixture f = Renamed(pc::test::DefaultFixture(6), "b-");
    f.pair_files = {"agreement.jsonl", "other.jsonl"};
    const std::string b = RankInto(pc::reports::ReadSweepResults(WriteFixture(f, "b")), "b");
    CHECK_THROWS_WITH(
        pc::reports::ReadRankTables({a, b}, Options()),
        Contains("--tables: " + a + " and " + b + " differ in conventions_key (") &&
            Contains("first differing convention: 'pairs[1].file': \"blimp_sva.jsonl\" vs \"other.jsonl\"") &&
            Contains("cannot be ranked together"));
  }
  const std::string b =
      RankInto(pc::reports::ReadSweepResults(WriteFixture(Renamed(pc::test::DefaultFixture(6), "b-"), "b")), "b");
  REQUIRE(pc::reports::ReadRankTables({a, b}, Options()).runs.size() == 12);
  // The same conventions: the joined ones are the first folder's, calibration included.
  REQUIRE(pc::reports::ReadRankTables({a, b}, Options()).conventions == first.conventions);
  SECTION("the reference mean NLL") {
    EditJson(b + "/rank_inputs.json", [](nlohmann::json& j) { j["reference"]["mean_nll"] = 2.5 * (1 + 1e-5); });
    CHECK_THROWS_WITH(pc::reports::ReadRankTables({a, b}, Options()),
                      Contains("differ in the reference mean NLL (2.5 vs 2.50002"));
    EditJson(b + "/rank_inputs.json", [](nlohmann::json& j) { j["reference"]["mean_nll"] = 2.5 * (1 + 1e-8); });
    CHECK(pc::reports::ReadRankTables({a, b}, Options()).runs.size() == 12);  // within 1e-6, relative
  }
  SECTION("the measure settings") {
    EditJson(b + "/rank_inputs.json", [](nlohmann::json& j) { j["measure"]["seq_len"] = {128}; });
    CHECK_THROWS_WITH(pc::reports::ReadRankTables({a, b}, Options()),
                      Contains(a + " and " + b + " differ in the measure seq_len ([64] vs [128]"));
  }
  SECTION("the calibration: recorded per run, so folders calibrated on other data join") {
    EditJson(b + "/rank_inputs.json", [](nlohmann::json& j) {
      j["conventions"]["calib"]["samples"] = 32;
      j["conventions"]["calib"]["texts"] = {{"wiki", {{"source", "wiki.txt"}, {"sha256", "ab"}}}};
      j["conventions_key"] = std::string(64, 'c');
    });
    const SweepResults s = pc::reports::ReadRankTables({a, b}, Options());
    CHECK(s.runs.size() == 12);
    CHECK(s.conventions_key == first.conventions_key);  // the first folder's
    const nlohmann::json joined = nlohmann::json::parse(s.conventions);
    CHECK(joined["calib"] == "differs between the joined folders: each run's calibration is in runs.csv");
    CHECK(joined["seq_len"] == nlohmann::json::parse(first.conventions)["seq_len"]);
  }
  SECTION("the calibration and another convention: the other is named") {
    EditJson(b + "/rank_inputs.json", [](nlohmann::json& j) {
      j["conventions"]["calib"]["samples"] = 32;
      j["conventions"]["eval_text"] = "other.txt";
      j["conventions_key"] = std::string(64, 'c');
    });
    CHECK_THROWS_WITH(pc::reports::ReadRankTables({a, b}, Options()),
                      Contains("differ in conventions_key (") &&
                          Contains("first differing convention: 'eval_text': \"eval.txt\" vs \"other.txt\""));
    EditJson(b + "/rank_inputs.json", [](nlohmann::json& j) { j["conventions"] = "not an object"; });
    CHECK_THROWS_WITH(pc::reports::ReadRankTables({a, b}, Options()), Contains("differ in conventions_key ("));
  }
  SECTION("a damaged rank_inputs.json") {
    EditJson(b + "/rank_inputs.json", [](nlohmann::json& j) { j["reference"]["mean_nll"] = "2.5"; });
    CHECK_THROWS_WITH(pc::reports::ReadRankTables({a, b}, Options()),
                      Contains(b + "/rank_inputs.json 'reference': 'mean_nll' is not a number (got \"2.5\")"));
    EditJson(b + "/rank_inputs.json", [](nlohmann::json& j) { j["version"] = 2; });
    CHECK_THROWS_WITH(pc::reports::ReadRankTables({a, b}, Options()), Contains(b + "/rank_inputs.json: version 2"));
  }
  SECTION("a folder without rank_inputs.json is accepted and listed as unchecked") {
    pc::fs::RemoveAll(b + "/rank_inputs.json");
    const SweepResults s = pc::reports::ReadRankTables({a, b}, Options());
    CHECK_FALSE(s.tables[1].checked);
    CHECK(pc::reports::UncheckedFolders(s) == std::vector<std::string>{b});
    const RankingAnalysis an = pc::reports::AnalyzeSweep(s, Options());
    CHECK_THAT(pc::reports::Headline(s, an), Contains("from saved tables: " + a + " 6, " + b + " 6") &&
                                                 Contains("settings not checked: no rank_inputs.json in " + b + " (written before"));
    const auto files = Report(s, an);
    CHECK_THAT(files.at("conventions.csv"), Contains(b + ": 6 runs; no rank_inputs.json: settings not checked"));
    // The join's own record says so, and a later join of it says it again.
    CHECK(pc::reports::ParseRankInputs(files.at("rank_inputs.json"), "x").unchecked == std::vector<std::string>{b});
    const std::string joined = RankInto(s, "joined");
    const SweepResults again = pc::reports::ReadRankTables({joined}, Options());
    CHECK(pc::reports::UncheckedFolders(again) == std::vector<std::string>{b + " (joined into " + joined + ")"});
    // With no record at all, nothing is claimed.
    pc::fs::RemoveAll(a + "/rank_inputs.json");
    const SweepResults none = pc::reports::ReadRankTables({a, b}, Options());
    CHECK(none.conventions_key.empty());
    const auto none_files = Report(none, pc::reports::AnalyzeSweep(none, Options()));
    CHECK_THAT(
        none_files.at("conventions.csv"),
        Contains("conventions_key,not in the tables") &&
            Contains(
                "\"ppl not in the tables, mean NLL not in the tables, minimal-pair accuracy not in the tables\"") &&
            Contains("seq_len,not in the tables"));
  }
}

TEST_CASE("rank --tables: malformed tables are refused naming the file, line and column", "[reports][rank][tables]") {
  const SweepResults s = pc::reports::ReadSweepResults(WriteFixture(pc::test::DefaultFixture(6), "bad"));
  const std::string dir = RankInto(s, "bad");
  const std::string pv = dir + "/predictor_values.csv", ov = dir + "/outcome_values.csv";
  auto read = [&] { return pc::reports::ReadRankTables({dir}, Options()); };
  SECTION("a non-numeric cell") {
    std::string column;
    EditCsv(pv, [&](pc::reports::CsvRecords& csv) {
      column = csv.header[4];
      csv.rows[2][4] = "0.1x";
    });
    CHECK_THROWS_WITH(
        read(), Contains(pv + ": line 4, column '" + column + "' (5): expected a number or an empty cell, got '0.1x'"));
  }
  SECTION("a ragged row") {
    std::vector<std::string> lines = pc::Split(pc::fs::ReadFile(ov), '\n');
    lines[3] = lines[3].substr(0, lines[3].rfind(',')) + "\r";
    pc::test::WriteText(ov, pc::Join(lines, "\n"));
    CHECK_THROWS_WITH(read(), Contains(ov + ": line 4 has 12 fields, the header 13 (a ragged row)"));
  }
  SECTION("a missing run column") {
    EditCsv(ov, [](pc::reports::CsvRecords& csv) { csv.header[0] = "name"; });
    CHECK_THROWS_WITH(read(), Contains(ov + ": line 1 (the header) has no 'run' column"));
  }
  SECTION("a missing index column") {
    EditCsv(dir + "/runs.csv", [](pc::reports::CsvRecords& csv) { csv.header[0] = "#"; });
    CHECK_THROWS_WITH(read(), Contains(dir + "/runs.csv: line 1 (the header) has no 'index' column"));
  }
  SECTION("a bad index") {
    EditCsv(dir + "/runs.csv", [](pc::reports::CsvRecords& csv) { csv.rows[1][0] = "one"; });
    CHECK_THROWS_WITH(read(), Contains(dir + "/runs.csv: line 3, column 'index' (1): expected an integer, got 'one'"));
  }
  SECTION("an empty file, a missing file, an unclosed quote") {
    pc::test::WriteText(pv, "");
    CHECK_THROWS_WITH(read(), Contains(pv + ": the file is empty"));
    pc::fs::RemoveAll(pv);
    CHECK_THROWS_WITH(read(), Contains("--tables '" + dir + "': no predictor_values.csv"));
    pc::test::WriteText(pv, "run,x\r\n\"rtn-0,1\r\n");
    CHECK_THROWS_WITH(read(), Contains(pv + ": line 2: a quoted field is not closed"));
  }
  SECTION("a run missing from a values file, or not in runs.csv") {
    EditCsv(ov, [](pc::reports::CsvRecords& csv) { csv.rows.pop_back(); });
    CHECK_THROWS_WITH(read(), Contains(ov + ": no row for run '") && Contains(dir + "/runs.csv line "));
    EditCsv(pv, [](pc::reports::CsvRecords& csv) { csv.rows[0][0] = "ghost"; });
    CHECK_THROWS_WITH(read(), Contains(pv + ": line 2, column 'run' (1): run 'ghost' is not in " + dir + "/runs.csv"));
  }
  SECTION("empty cells, nan, and columns this version does not know") {
    EditCsv(pv, [](pc::reports::CsvRecords& csv) {
      csv.header.push_back("perp.future.block_output.accumulated.mean");
      for (auto& row : csv.rows) row.push_back("1");
      csv.rows[0][3] = "";
      csv.rows[1][3] = "nan";
    });
    const SweepResults t = read();
    CHECK(t.tables[0].ignored ==
          std::vector<std::string>{"predictor_values.csv: perp.future.block_output.accumulated.mean"});
    const auto m = pc::reports::ExtractPredictors(t, pc::reports::PredictorCatalogue());
    size_t nan = 0;
    for (double v : m.values[0]) nan += std::isnan(v) ? 1 : 0;
    CHECK(nan == 2);
  }
  SECTION("SparseGPT with joint quantization is its own family, as in a results file") {
    EditCsv(dir + "/runs.csv", [](pc::reports::CsvRecords& csv) {
      csv.rows[0][*csv.Column("method")] = "sparsegpt";
      csv.rows[0][*csv.Column("params")] = "bits=4, sparsity=0.5";
      csv.rows[1][*csv.Column("method")] = "sparsegpt";
      csv.rows[1][*csv.Column("params")] = "bits=0, sparsity=0.5";
    });
    const SweepResults t = read();
    CHECK(t.runs[0].method_family == "joint");
    CHECK(t.runs[1].method_family == "sparsegpt");
  }
}

TEST_CASE("rank --tables: every outcome name reads back as the outcome it names", "[reports][rank][tables]") {
  const SweepResults s = pc::reports::ReadSweepResults(WriteFixture(pc::test::DefaultFixture(10), "outcomes"));
  const pc::reports::OutcomeMatrix m = pc::reports::ExtractOutcomes(s);
  REQUIRE(m.outcomes.size() == 10);  // per-file pair drops and lm-eval among them
  for (const pc::reports::OutcomeInfo& o : m.outcomes) {
    INFO(o.name);
    const auto d = pc::reports::DescribeOutcome(o.name);
    REQUIRE(d.has_value());
    CHECK(d->title == o.title);
    CHECK(d->description == o.description);
    CHECK(d->orientation == o.orientation);
  }
  CHECK(pc::reports::DescribeOutcome("lm_eval.gsm8k.exact_match,strict-match")->title ==
        "gsm8k exact_match,strict-match");
  CHECK_FALSE(pc::reports::DescribeOutcome("ppl").has_value());
  CHECK_FALSE(pc::reports::DescribeOutcome("lm_eval.task").has_value());
  CHECK_FALSE(pc::reports::DescribeOutcome("pairs.accuracy_drop.").has_value());
}
