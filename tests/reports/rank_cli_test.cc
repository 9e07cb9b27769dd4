// `perpcomp rank` end to end on synthetic sweep-results files: the files, the headline, a seed's
// reproducibility through the command (and independence of --threads), a selection of runs (--runs), ranking
// the report folders again (--tables: a round trip, a join of two folders, the option checks), the
// refusals with their messages, the listings, and the report in headless Chromium (console, rendered tables
// and SVGs, a screenshot).
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "core/fs.h"
#include "core/strings.h"
#include "store/file.h"
#include "tests/reports/reports_test_support.h"
#include "tests/reports/sweep_fixture.h"
#include "tests/test_support.h"

using Catch::Matchers::Contains;

namespace {

std::string Q(const std::string& s) {
  return "'" + s + "'";
}

std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Predictors of the block outputs, the logits and the weights: every main predictor, a quick bootstrap.
const char kQuick[] = " --bootstrap 200 --predictors '*.block_output.*,*.logits.*,weight.*'";

struct Fixture {
  std::string dir, results;
};

Fixture MakeFixture(int runs, const std::string& name = "sweep") {
  Fixture f;
  f.dir = pc::test::TempDir("rank-cli");
  f.results = f.dir + "/" + name + ".h5";
  pc::test::WriteSweepResults(f.results, pc::test::DefaultFixture(runs));
  return f;
}

// "(12 tables, 24 figures;" from the command's last line.
std::pair<size_t, size_t> ReportedCounts(const std::string& out) {
  const size_t at = out.find("report: ");
  REQUIRE(at != std::string::npos);
  const size_t open = out.find('(', at);
  const std::vector<std::string> parts = pc::Split(out.substr(open + 1), ' ');
  REQUIRE(parts.size() >= 3);
  return {size_t(std::stoul(parts[0])), size_t(std::stoul(parts[2]))};
}

}  // namespace

TEST_CASE("perpcomp rank writes the report and prints the headline", "[reports][rank][cli]") {
  const Fixture f = MakeFixture(12);
  const std::string out = f.dir + "/report";
  pc::test::RunResult r =
      pc::test::RunPerpcomp("rank " + Q(f.results) + " --out " + Q(out) + kQuick + " --seed 5 --threads 1");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("perpcomp rank: 12 runs of sweep 'fixture-sweep'; families: rtn 3, awq 3, magnitude 3, wanda 3") &&
                        Contains("bootstrap 200 resamples, seed 5") && Contains("best predictor: ") &&
                        Contains("ratio.block_output.accumulated.mean: ρ(perp) − ρ(iso) = ") &&
                        Contains("report: " + out + "/report.html"));
  for (const char* name :
       {"report.html", "report.md", "ranking.csv", "correlations.csv", "differences.csv", "conventions.csv"}) {
    INFO(name);
    CHECK(pc::fs::Exists(out + "/" + name));
  }
  CHECK_THAT(Slurp(out + "/conventions.csv"),
             Contains("200 resamples (B) of the runs, seed 5") && Contains("--seed 5 --threads 1"));
  const auto [tables, figures] = ReportedCounts(r.out);
  CHECK(tables == 12);
  CHECK(figures == 1 + 1 + 9 + 3 + 12);

  // An existing folder is kept unless --overwrite.
  pc::test::RunResult again = pc::test::RunPerpcomp("rank " + Q(f.results) + " --out " + Q(out) + kQuick);
  CHECK(again.exit_code == 1);
  CHECK_THAT(again.err, Contains("--overwrite"));

  // The same seed gives the same numbers, with any thread count; another seed other intervals.
  const std::string corr = Slurp(out + "/correlations.csv"), diff = Slurp(out + "/differences.csv");
  r = pc::test::RunPerpcomp("rank " + Q(f.results) + " --out " + Q(out) + kQuick + " --seed 5 --threads 2 --overwrite");
  REQUIRE(r.exit_code == 0);
  CHECK(Slurp(out + "/correlations.csv") == corr);
  CHECK(Slurp(out + "/differences.csv") == diff);
  const std::string other = f.dir + "/other";
  r = pc::test::RunPerpcomp("rank " + Q(f.results) + " --out " + Q(other) + kQuick + " --seed 6");
  REQUIRE(r.exit_code == 0);
  CHECK(Slurp(other + "/differences.csv") != diff);
}

TEST_CASE("perpcomp rank --runs ranks a selection and records it", "[reports][rank][cli]") {
  const Fixture f = MakeFixture(12);
  const std::string out = f.dir + "/pruning";
  pc::test::RunResult r = pc::test::RunPerpcomp("rank " + Q(f.results) + " --out " + Q(out) + kQuick +
                                                " --runs family=pruning --held-out-splits 0");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("perpcomp rank: 6 runs of sweep 'fixture-sweep' (selected by --runs 'family=pruning': 6 "
                             "of the file's 12); families: magnitude 3, wanda 3"));
  CHECK_THAT(Slurp(out + "/conventions.csv"),
             Contains("run selection") && Contains("--runs 'family=pruning': 6 of 12 runs ranked") &&
                 Contains("12 in the file"));
  CHECK(Count(Slurp(out + "/ranking.csv"), "\r\n") == 1 + 6);

  r = pc::test::RunPerpcomp("rank " + Q(f.results) + " --out " + Q(f.dir + "/none") + " --runs 'delta_nll<-5'");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("--runs 'delta_nll<-5': no run of"));
  CHECK_FALSE(pc::fs::Exists(f.dir + "/none"));
  r = pc::test::RunPerpcomp("rank " + Q(f.results) + " --out " + Q(f.dir + "/none") + " --runs ''");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("--runs: expected terms such as family=pruning"));
}

TEST_CASE("perpcomp rank --tables ranks report folders to the numbers of their results file", "[reports][rank][cli]") {
  const Fixture f = MakeFixture(12);
  const std::string all = f.dir + "/all", again = f.dir + "/again", quant = f.dir + "/quant", prune = f.dir + "/prune";
  auto rank = [&](const std::string& args) {
    pc::test::RunResult r = pc::test::RunPerpcomp("rank " + args + kQuick + " --seed 3 --held-out-splits 50");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return r;
  };
  rank(Q(f.results) + " --out " + Q(all));
  CHECK_THAT(Slurp(all + "/rank_inputs.json"), Contains("\"format\": \"perpcomp-rank-inputs\""));
  const char* const numbers[] = {"correlations.csv",     "differences.csv",    "difference_samples.csv",
                                 "predictor_values.csv", "outcome_values.csv", "ranking.csv"};
  // Round trip: the report's own folder ranks to the same numbers.
  pc::test::RunResult r = rank("--tables " + Q(all) + " --out " + Q(again));
  CHECK_THAT(r.out, Contains("perpcomp rank: 12 runs from saved tables: " + all +
                             " 12 (sweep 'fixture-sweep'); "
                             "families: rtn 3, awq 3, magnitude 3, wanda 3"));
  CHECK(ReportedCounts(r.out).second == 1 + 1 + 9 + 3);  // no per-layer profiles: not in the tables
  for (const char* name : numbers) {
    INFO(name);
    CHECK(Slurp(again + "/" + name) == Slurp(all + "/" + name));
  }
  // Two folders of a split sweep join to the numbers of all runs at once; one without rank_inputs.json is
  // accepted with a warning.
  rank(Q(f.results) + " --runs family=quantization --out " + Q(quant));
  rank(Q(f.results) + " --runs family=pruning --out " + Q(prune));
  pc::fs::RemoveAll(prune + "/rank_inputs.json");
  r = rank("--tables " + Q(quant) + " --tables " + Q(prune) + " --out " + Q(f.dir + "/joined"));
  CHECK_THAT(r.out, Contains("12 runs from saved tables: " + quant + " 6, " + prune + " 6") &&
                        Contains("settings not checked: no rank_inputs.json in " + prune));
  CHECK(Count(r.err, "no rank_inputs.json in " + prune) == 1);
  for (const char* name : numbers) {
    INFO(name);
    CHECK(Slurp(f.dir + "/joined/" + name) == Slurp(all + "/" + name));
  }
  pc::test::RunResult listed = pc::test::RunPerpcomp("rank --tables " + Q(quant) + " --list-outcomes");
  REQUIRE(listed.exit_code == 0);
  CHECK_THAT(listed.out, Contains("delta_nll\t6 runs\t") && Contains("lm_eval.blimp_agr.acc\t4 runs\t"));

  auto err = [&](const std::string& args) {
    pc::test::RunResult bad = pc::test::RunPerpcomp("rank " + args);
    CHECK(bad.exit_code != 0);
    return bad.err;
  };
  CHECK_THAT(err(Q(f.results) + " --tables " + Q(all) + " --out " + Q(f.dir + "/x")),
             Contains("and --tables are mutually exclusive"));
  CHECK_THAT(err("--tables " + Q(quant) + " --tables " + Q(all) + " --out " + Q(f.dir + "/x")),
             Contains("--tables: run 'rtn-0' is in both " + quant + " and " + all));
  CHECK_THAT(err("--tables " + Q(f.dir + "/nowhere") + " --out " + Q(f.dir + "/x")), Contains("not a folder"));
  CHECK_FALSE(pc::fs::Exists(f.dir + "/x"));
}

TEST_CASE("perpcomp rank: bad input is refused or reported with its reason", "[reports][rank][cli]") {
  const Fixture f = MakeFixture(6);
  const std::string out = f.dir + "/out";
  SECTION("a file of another kind") {
    pc::store::File::Create(f.dir + "/m.h5", pc::store::kind::kMeasure).Close();
    pc::test::RunResult r = pc::test::RunPerpcomp("rank " + Q(f.dir + "/m.h5") + " --out " + Q(out));
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Contains("expected a 'sweep-results' file, got 'measure'"));
    CHECK_FALSE(pc::fs::Exists(out));
  }
  SECTION("one run: the ranking, and 'insufficient' for every correlation") {
    const Fixture one = MakeFixture(1, "one");
    pc::test::RunResult r = pc::test::RunPerpcomp("rank " + Q(one.results) + " --out " + Q(out) + kQuick);
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK_THAT(
        r.out,
        Contains("best predictor: none — 1 run with delta_nll; a correlation needs at least 5 runs (insufficient)"));
    CHECK_THAT(Slurp(out + "/ranking.csv"), Contains("rtn-0"));
    CHECK_THAT(Slurp(out + "/report.md"), Contains("insufficient"));
  }
  SECTION("runs under different conventions") {
    pc::test::SweepFixture mixed = pc::test::DefaultFixture(6);
    mixed.odd_conventions_run = 2;
    pc::test::WriteSweepResults(f.dir + "/mixed.h5", mixed);
    pc::test::RunResult r = pc::test::RunPerpcomp("rank " + Q(f.dir + "/mixed.h5") + " --out " + Q(out));
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Contains("/runs/magnitude-2: conventions_key") && Contains("'seq_len': 64 vs 128"));
  }
  SECTION("options") {
    auto err = [&](const std::string& args) {
      pc::test::RunResult r = pc::test::RunPerpcomp("rank " + args);
      CHECK(r.exit_code != 0);
      return r.err;
    };
    CHECK_THAT(
        err(Q(f.results) + " --out " + Q(out) + " --outcome ppl"),
        Contains("--outcome: 'ppl' is not an outcome of this results file") && Contains("lm_eval.blimp_agr.acc"));
    CHECK_THAT(err(Q(f.results) + " --out " + Q(out) + " --predictors 'perp.bogus.*'"),
               Contains("the pattern 'perp.bogus.*' matches no predictor"));
    CHECK_THAT(err(Q(f.results)), Contains("--out DIR is required"));
    CHECK_THAT(err("--out " + Q(out)), Contains("no results file given"));
    CHECK_THAT(err(Q(f.results) + " --out " + Q(out) + " --bootstrap 0"), Contains("resamples must be >= 1"));
    CHECK_THAT(err(Q(f.results) + " --out " + Q(out) + " --coefficient tau"),
               Contains("--coefficient: unknown correlation coefficient 'tau'"));
    CHECK_THAT(err(Q(f.dir + "/none.h5") + " --out " + Q(out)), Contains("does not exist"));
    CHECK_FALSE(pc::fs::Exists(out));
  }
}

TEST_CASE("perpcomp rank lists predictors and outcomes", "[reports][rank][cli]") {
  pc::test::RunResult all = pc::test::RunPerpcomp("rank --list-predictors");
  REQUIRE(all.exit_code == 0);
  // Per metric and layer aggregate (mean, max, final): block_output and block_update 2 modes each,
  // attn_update and mlp_update 2 modes x 2 frames (cos and norm_ratio: the self frame only),
  // linear 1, final_norm and logits 2 each (mean and max over tokens); 18 metrics have the
  // incoming frame, cos.mean and norm_ratio.mean do not; weight.rel_fro has 3.
  const size_t with_incoming = 3 * (2 + 2 + 4 + 4 + 1) + 2 + 2, self_only = 3 * (2 + 2 + 2 + 2 + 1) + 2 + 2;
  CHECK(Count(all.out, "\n") == 18 * with_incoming + 2 * self_only + 3);
  CHECK_THAT(all.out, Contains("perp.ratio.block_output.accumulated.mean\tperpendicular error"));
  pc::test::RunResult some = pc::test::RunPerpcomp("rank --list-predictors --predictors 'perp.ratio.*.final'");
  REQUIRE(some.exit_code == 0);
  CHECK(Count(some.out, "\n") == 13);  // 2 block_output, 4 + 4 attn/mlp updates, 2 block_update, 1 linear

  pc::test::SweepFixture fx = pc::test::DefaultFixture(5);
  fx.final_norm = false;
  const std::string dir = pc::test::TempDir("rank-list");
  pc::test::WriteSweepResults(dir + "/s.h5", fx);
  pc::test::RunResult in_file = pc::test::RunPerpcomp(
      "rank " + Q(dir + "/s.h5") + " --list-predictors --predictors '*.final_norm.*,iso.ratio.logits.*'");
  REQUIRE(in_file.exit_code == 0);
  CHECK_THAT(
      in_file.out,
      Contains("iso.ratio.logits.local\t") &&
          Contains("# not available: iso.mean.final_norm.accumulated: run 'rtn-0' has no rows for site final_norm"));
  pc::test::RunResult outcomes = pc::test::RunPerpcomp("rank " + Q(dir + "/s.h5") + " --list-outcomes");
  REQUIRE(outcomes.exit_code == 0);
  CHECK_THAT(outcomes.out, Contains("delta_nll\t5 runs\t") && Contains("lm_eval.blimp_agr.acc\t4 runs\t"));
}

TEST_CASE("the rank report in headless Chromium: no console errors, every table and figure rendered",
          "[reports][rank][cli][chromium]") {
  PC_SKIP_IF(pc::test::Run("command -v chromium").exit_code != 0,
             "chromium is not installed (Debian package chromium; tools/setup.sh with PERPCOMP_SETUP_EXTRA=chromium)");
  const Fixture f = MakeFixture(10);
  const std::string out = f.dir + "/report";
  pc::test::RunResult r = pc::test::RunPerpcomp("rank " + Q(f.results) + " --out " + Q(out) + kQuick);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto [tables, figures] = ReportedCounts(r.out);
  CHECK(tables == 12);
  CHECK(figures == 1 + 1 + 9 + 3 + 10);

  // Offline, no profile, every console message on stderr as "...:CONSOLE:<line>] ...".
  auto chromium = [&](const std::string& profile, const std::string& args) {
    return pc::test::Run(
        "timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
        "--disable-background-networking --disable-component-update --disable-sync --hide-scrollbars "
        "--user-data-dir=" +
        Q(f.dir + "/" + profile) + " --enable-logging=stderr --v=0 " + args);
  };
  // The console capture works: a control page's console.error shows up.
  pc::test::WriteText(f.dir + "/control.html",
                      "<!DOCTYPE html><html><body><script>console.error('control-error')</script></body></html>");
  pc::test::RunResult control = chromium("profile-control", "--dump-dom " + Q("file://" + f.dir + "/control.html"));
  REQUIRE(control.exit_code == 0);
  REQUIRE_THAT(control.err, Contains("CONSOLE") && Contains("control-error"));

  pc::test::RunResult dom = chromium("profile-dom", "--dump-dom " + Q("file://" + out + "/report.html"));
  REQUIRE(dom.exit_code == 0);
  std::vector<std::string> console;
  for (const std::string& line : pc::Split(dom.err, '\n')) {
    if (line.find(":CONSOLE") != std::string::npos) console.push_back(line);
  }
  INFO("console: " << pc::Join(console, "\n"));
  CHECK(console.empty());
  CHECK(Count(dom.out, "<table>") == tables);
  CHECK(Count(dom.out, "<svg ") == figures);
  CHECK_THAT(dom.out, Contains("Ranking of runs by delta_nll") && Contains("Conventions of every number"));

  const std::string shot = f.dir + "/report.png";
  pc::test::RunResult png = chromium(
      "profile-shot", "--window-size=1280,2400 --screenshot=" + Q(shot) + " " + Q("file://" + out + "/report.html"));
  REQUIRE(png.exit_code == 0);
  REQUIRE(pc::fs::Exists(shot));
  CHECK(pc::fs::FileSize(shot) > 20000);
  CHECK(Slurp(shot).substr(1, 3) == "PNG");
}
