// perpcomp rank's library part on synthetic sweep-results files (tests/reports/sweep_fixture.h): reading and
// checking the file, the predictor catalogue and selection, predictor values against hand-computed layer
// aggregates, outcomes, the analysis (perp vs iso, best predictor, ranking, leave-one-family-out, a seed's
// reproducibility), one run, the report's files, and the selection of runs (--runs).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "core/error.h"
#include "core/strings.h"
#include "metrics/site_columns.h"
#include "reports/predictors.h"
#include "reports/ranking_analysis.h"
#include "reports/ranking_report.h"
#include "reports/run_selection.h"
#include "reports/sweep_results.h"
#include "store/file.h"
#include "tests/reports/reports_test_support.h"
#include "tests/reports/sweep_fixture.h"
#include "tests/test_support.h"

using Catch::Matchers::Contains;
using pc::reports::PredictorInfo;

namespace {

std::string WriteFixture(const pc::test::SweepFixture& f, const std::string& name = "sweep") {
  const std::string path = pc::test::TempDir("rank") + "/" + name + ".h5";
  pc::test::WriteSweepResults(path, f);
  return path;
}

double Value(const pc::reports::SweepRun& run, const std::string& predictor) {
  const PredictorInfo* p = pc::reports::FindPredictor(predictor);
  REQUIRE(p != nullptr);
  const pc::reports::PredictorValue v = pc::reports::ExtractPredictor(*p, run);
  INFO(predictor << ": " << v.missing);
  REQUIRE(v.missing.empty());
  return v.value;
}

pc::reports::RankOptions FastOptions(uint64_t seed = 0) {
  pc::reports::RankOptions o;
  o.bootstrap.resamples = 300;
  o.bootstrap.seed = seed;
  return o;
}

}  // namespace

TEST_CASE("rank: reads a sweep-results file in index order with every part", "[reports][rank]") {
  pc::test::SweepFixture f = pc::test::DefaultFixture(6);
  std::swap(f.runs[0], f.runs[5]);  // written out of name order; read back by index
  const std::string path = WriteFixture(f);
  const pc::reports::SweepResults s = pc::reports::ReadSweepResults(path);
  REQUIRE(s.runs.size() == 6);
  CHECK(s.sweep == "fixture-sweep");
  CHECK(s.conventions_key.size() == 64);
  CHECK(s.runs_total == 6);
  CHECK(s.reference_pairs_accuracy == Approx(0.9));
  CHECK(s.runs[0].name == f.runs[0].name);
  CHECK(s.runs[0].index == 0);
  CHECK(s.runs[5].index == 5);
  const pc::reports::SweepRun& r = s.runs[1];
  CHECK(r.family == "quantization");
  CHECK(r.method == "awq");
  CHECK(r.downstream.at("delta_nll") == Approx(f.runs[1].delta_nll));
  CHECK(r.has_pairs);
  CHECK(r.pair_files.size() == 2);
  CHECK(r.pairs_accuracy_drop == Approx(0.9 - r.pairs_accuracy));
  CHECK(r.has_lm_eval);
  CHECK(r.lm_eval.size() == 3);
  CHECK(r.weights.has_value());
  CHECK(r.seq_len == 64);
  CHECK_FALSE(s.runs[4].has_lm_eval);
}

TEST_CASE("rank: bad results files are refused with the store's or rank's message", "[reports][rank]") {
  const std::string dir = pc::test::TempDir("rank-bad");
  SECTION("another kind") {
    pc::store::File::Create(dir + "/m.h5", pc::store::kind::kMeasure).Close();
    CHECK_THROWS_WITH(pc::reports::ReadSweepResults(dir + "/m.h5"),
                      Contains("expected a 'sweep-results' file, got 'measure'"));
  }
  SECTION("not HDF5") {
    pc::test::WriteText(dir + "/x.txt", "hello");
    CHECK_THROWS_WITH(pc::reports::ReadSweepResults(dir + "/x.txt"), Contains("is not an HDF5 file"));
  }
  SECTION("missing") {
    CHECK_THROWS_WITH(pc::reports::ReadSweepResults(dir + "/none.h5"), Contains("does not exist"));
  }
  SECTION("mixed conventions") {
    pc::test::SweepFixture f = pc::test::DefaultFixture(6);
    f.odd_conventions_run = 3;
    const std::string path = WriteFixture(f);
    CHECK_THROWS_WITH(pc::reports::ReadSweepResults(path),
                      Contains(":/runs/" + f.runs[3].name + ": conventions_key") &&
                          Contains("first differing convention: 'seq_len': 64 vs 128") &&
                          Contains("cannot be ranked together"));
  }
  SECTION("no runs") {
    pc::test::SweepFixture f;
    const std::string path = WriteFixture(f);
    CHECK_THROWS_WITH(pc::reports::ReadSweepResults(path), Contains("/runs holds no run"));
  }
  SECTION("a run that is not complete, a run without its family") {
    const std::string path = WriteFixture(pc::test::DefaultFixture(5));
    {
      pc::store::File file = pc::store::File::OpenReadWrite(path);
      file.root().OpenGroup("runs/rtn-0").SetAttr("status", "partial");
    }
    CHECK_THROWS_WITH(pc::reports::ReadSweepResults(path), Contains("/runs/rtn-0: the run's status is 'partial'"));
    const std::string path2 = WriteFixture(pc::test::DefaultFixture(5), "b");
    {
      pc::store::File file = pc::store::File::OpenReadWrite(path2);
      file.root().OpenGroup("runs/awq-1").SetAttr("family", 3.0);
    }
    CHECK_THROWS_WITH(pc::reports::ReadSweepResults(path2), Contains("family"));
  }
}

TEST_CASE("rank: the predictor catalogue is systematic and documented", "[reports][rank]") {
  const auto& all = pc::reports::PredictorCatalogue();
  std::set<std::string> names;
  for (const PredictorInfo& p : all) {
    CHECK(names.insert(p.name).second);
    CHECK_FALSE(p.description.empty());
    if (p.quantity == "weight") continue;
    std::string expect = p.quantity + "." + p.form + "." + p.site + "." + p.kind +
                         (p.frame.empty() ? "" : "." + p.frame) + (p.aggregate.empty() ? "" : "." + p.aggregate);
    CHECK(p.name == expect);
  }
  // 9 self-frame contexts (block_update included) × 20 forms × 3 aggregates + 4 incoming × 18 × 3 + 4
  // single-valued sites × 20 + 3 weight; 20 forms = iso, par, perp × 5 (mean, mean_rel, ratio,
  // mean_relnorm, last_relnorm) + p × 3 + cos + norm_ratio.
  CHECK(all.size() == 9 * 20 * 3 + 4 * 18 * 3 + 4 * 20 + 3);
  // Every predictor reads a column the measure writer declares (metrics/site_columns.h), and every
  // declared error column but the denominator ref_sq is some predictor's.
  std::set<std::string> declared, weight_declared, used;
  for (const pc::SiteColumn& c : pc::kSiteValueColumns) declared.insert(c.name);
  for (const char* c : pc::kWeightValueColumns) weight_declared.insert(c);
  for (const PredictorInfo& p : all) {
    CHECK((p.table == "sites" ? declared : weight_declared).count(p.column) == 1);
    used.insert(p.column);
  }
  for (const pc::SiteColumn& c : pc::kSiteValueColumns) CHECK((used.count(c.name) == 1) == (std::string(c.quantity) != "ref_sq"));
  CHECK(pc::reports::FindPredictor("perp.last_relnorm.block_update.local.self.mean") != nullptr);
  CHECK(pc::reports::FindPredictor("p.last_relnorm.attn_update.local.self.mean") == nullptr);  // p is a norm ratio
  for (const std::string& m : pc::reports::MainPredictorNames()) CHECK(pc::reports::FindPredictor(m) != nullptr);
  CHECK(pc::reports::FindPredictor("cos.mean.block_output.accumulated.min") != nullptr);
  CHECK(pc::reports::FindPredictor("cos.mean.block_output.accumulated.max") == nullptr);
  CHECK(pc::reports::FindPredictor("p.ratio.attn_update.local.incoming.maxdev") != nullptr);
  CHECK(pc::reports::FindPredictor("cos.mean.attn_update.local.incoming.mean") == nullptr);  // same as self

  auto sel = pc::reports::SelectPredictors(all, "perp.ratio.*.mean, iso.ratio.block_output.*");
  for (const PredictorInfo& p : sel)
    CHECK((pc::StartsWith(p.name, "perp.ratio.") || pc::StartsWith(p.name, "iso.ratio.block_output.")));
  CHECK(sel.size() == 13 + 6);
  auto excl = pc::reports::SelectPredictors(all, "!*.local*,!weight.*");
  for (const PredictorInfo& p : excl) CHECK(p.name.find(".local") == std::string::npos);
  CHECK_THROWS_WITH(pc::reports::SelectPredictors(all, "perp.nothing.*"),
                    Contains("the pattern 'perp.nothing.*' matches no predictor"));
  CHECK_THROWS_WITH(pc::reports::SelectPredictors(all, "perp.*,,iso.*"), Contains("an empty pattern"));
  CHECK_THROWS_WITH(pc::reports::SelectPredictors(all, "!*"), Contains("leaves no predictor"));
}

TEST_CASE("rank: predictor values equal hand-computed layer aggregates", "[reports][rank]") {
  pc::test::SweepFixture f = pc::test::DefaultFixture(2);
  f.runs[0].rel_fro = 0.06;
  // Per-layer values of a few (site, kind, frame, column) of run 0, set by hand.
  f.site_value = [](size_t run, const pc::test::FixtureSiteRow& r, const std::string& c) -> std::optional<double> {
    if (run != 0) return std::nullopt;
    const auto at = [&](std::vector<double> v) { return v.at(size_t(r.layer)); };
    if (r.site == "block_output" && r.kind == "accumulated" && c == "ratio_perp") return at({0.1, 0.4, 0.2});
    if (r.site == "block_output" && r.kind == "accumulated" && c == "ratio_p") return at({-0.1, 0.3, -0.5});
    if (r.site == "block_output" && r.kind == "local" && c == "mean_cos") return at({0.99, 0.95, 0.97});
    if (r.site == "attn_update" && r.kind == "local" && r.frame == "incoming" && c == "mean_rel_par")
      return at({0.3, 0.1, 0.2});
    if (r.site == "mlp_update" && r.kind == "accumulated" && r.frame == "self" && c == "mean_norm_ratio")
      return at({1.1, 0.8, 1.05});
    if (r.site == "linear" && r.kind == "local" && c == "ratio_iso") {
      const std::vector<std::string> roles = {"q", "k", "v", "o", "gate", "up", "down"};
      const double k = double(std::find(roles.begin(), roles.end(), r.role) - roles.begin());
      return double(r.layer + 1) * (k + 1);  // layer means 4, 8, 12
    }
    if (r.site == "logits" && r.kind == "local" && c == "ratio_perp") return 0.7;
    return std::nullopt;
  };
  const pc::reports::SweepResults s = pc::reports::ReadSweepResults(WriteFixture(f));
  const pc::reports::SweepRun& run = s.runs[0];
  CHECK(Value(run, "perp.ratio.block_output.accumulated.mean") == Approx(0.7 / 3).epsilon(1e-15));
  CHECK(Value(run, "perp.ratio.block_output.accumulated.final") == 0.2);
  CHECK(Value(run, "perp.ratio.block_output.accumulated.max") == 0.4);
  CHECK(Value(run, "p.ratio.block_output.accumulated.mean") == Approx(-0.1).epsilon(1e-15));
  CHECK(Value(run, "p.ratio.block_output.accumulated.maxdev") == -0.5);
  CHECK(Value(run, "cos.mean.block_output.local.min") == 0.95);
  CHECK(Value(run, "cos.mean.block_output.local.mean") == Approx(0.97).epsilon(1e-15));
  CHECK(Value(run, "par.mean_rel.attn_update.local.incoming.max") == 0.3);
  CHECK(Value(run, "par.mean_rel.attn_update.local.incoming.final") == 0.2);
  CHECK(Value(run, "norm_ratio.mean.mlp_update.accumulated.self.maxdev") == 0.8);
  CHECK(Value(run, "norm_ratio.mean.mlp_update.accumulated.self.mean") == Approx(2.95 / 3).epsilon(1e-15));
  CHECK(Value(run, "iso.ratio.linear.local.mean") == Approx(8.0).epsilon(1e-15));
  CHECK(Value(run, "iso.ratio.linear.local.final") == Approx(12.0).epsilon(1e-15));
  CHECK(Value(run, "iso.ratio.linear.local.max") == Approx(12.0).epsilon(1e-15));
  CHECK(Value(run, "perp.ratio.logits.local") == 0.7);
  // Weights: rel_fro × (l+1)/3 × (1 + 0.1·role) per linear; the mean over 7 roles is × 1.3.
  CHECK(Value(run, "weight.rel_fro.mean") == Approx(0.06 * 1.3 * 2 / 3).epsilon(1e-12));
  CHECK(Value(run, "weight.rel_fro.final") == Approx(0.06 * 1.3).epsilon(1e-12));
  CHECK(Value(run, "weight.rel_fro.max") == Approx(0.06 * 1.3).epsilon(1e-12));
  // The fixture's own formula elsewhere: ratio_iso = par + perp at block outputs (accumulated), final layer.
  CHECK(Value(s.runs[1], "iso.ratio.block_output.accumulated.final") == Approx(f.runs[1].par + f.runs[1].perp));

  CHECK(pc::reports::AggregateLayers({1, std::nan(""), 3}, "mean", 0) !=
        pc::reports::AggregateLayers({1, 2, 3}, "mean", 0));
  CHECK(std::isnan(pc::reports::AggregateLayers({}, "mean", 0)));
  CHECK_THROWS_WITH(pc::reports::AggregateLayers({1}, "median", 0), Contains("unknown layer aggregate 'median'"));
}

TEST_CASE("rank: predictors a run lacks are left out with a note", "[reports][rank]") {
  pc::test::SweepFixture f = pc::test::DefaultFixture(5);
  f.final_norm = false;  // OPT-style models have no final norm
  f.weights = false;
  const pc::reports::SweepResults s = pc::reports::ReadSweepResults(WriteFixture(f));
  const auto m = pc::reports::ExtractPredictors(s, pc::reports::PredictorCatalogue());
  // Left out: the final norm's predictors, the weights', and the block update's (the fixture has
  // no block_update rows, as results from before that site).
  size_t absent = 0;
  for (const auto& p : pc::reports::PredictorCatalogue()) {
    absent += p.site == "final_norm" || p.site == "weights" || p.site == "block_update" ? 1 : 0;
  }
  CHECK(m.predictors.size() == pc::reports::PredictorCatalogue().size() - absent);
  REQUIRE(m.left_out.size() == absent);
  CHECK_THAT(m.left_out.front(), Contains("block_update") && Contains("has no rows for site block_update"));
  bool final_norm_noted = false;
  for (const auto& note : m.left_out) final_norm_noted = final_norm_noted || note.find("has no rows for site final_norm") != std::string::npos;
  CHECK(final_norm_noted);
  CHECK_THAT(m.left_out.back(), Contains("weight.rel_fro.max: run 'rtn-0' has no weights table"));
}

TEST_CASE("rank: outcomes from downstream, pairs and lm-eval", "[reports][rank]") {
  const pc::test::SweepFixture f = pc::test::DefaultFixture(10);
  const pc::reports::SweepResults s = pc::reports::ReadSweepResults(WriteFixture(f));
  const pc::reports::OutcomeMatrix m = pc::reports::ExtractOutcomes(s);
  std::vector<std::string> names;
  for (const auto& o : m.outcomes) names.push_back(o.name);
  CHECK(names == std::vector<std::string>{"delta_nll", "kl_mean", "kl_p90", "kl_p99", "top1_disagreement",
                                          "pairs.accuracy_drop", "pairs.accuracy_drop.agreement.jsonl",
                                          "pairs.accuracy_drop.blimp_sva.jsonl", "lm_eval.blimp_agr.acc",
                                          "lm_eval.wikitext.word_perplexity"});
  CHECK(m.values[m.Find("top1_disagreement")][3] == Approx(0.5 * f.runs[3].delta_nll));
  CHECK(m.outcomes[m.Find("lm_eval.blimp_agr.acc")].orientation == pc::reports::Orientation::kHigherIsBetter);
  CHECK(m.outcomes[m.Find("lm_eval.wikitext.word_perplexity")].orientation == pc::reports::Orientation::kHigherIsWorse);
  CHECK(m.RunsWith(m.Find("lm_eval.blimp_agr.acc")).size() == 8);  // runs 4 and 9 have no lm-eval import
  CHECK(m.RunsWith(m.Find("delta_nll")).size() == 10);
  CHECK_THROWS_WITH(m.Find("ppl"), Contains("--outcome: 'ppl' is not an outcome") && Contains("delta_nll, kl_mean"));
}

TEST_CASE("rank: the analysis finds that perp predicts better than iso in the synthetic sweep", "[reports][rank]") {
  const pc::test::SweepFixture f = pc::test::DefaultFixture(16);
  const pc::reports::SweepResults s = pc::reports::ReadSweepResults(WriteFixture(f));
  pc::reports::RankOptions o = FastOptions(3);
  o.predictors = "*.block_output.*,weight.*";
  const pc::reports::RankingAnalysis a = pc::reports::AnalyzeSweep(s, o);
  REQUIRE(a.main.size() == pc::reports::MainPredictorNames().size());
  REQUIRE(a.main_differences == 3);
  const auto& d = a.differences[0];
  CHECK(d.perp == "perp.ratio.block_output.accumulated.mean");
  REQUIRE(d.all.has_interval());
  CHECK(*d.all.lo > 0);  // ΔNLL is 4 × perp with 15% noise; par varies independently
  // Leave one *method* family out (rtn, awq, magnitude, wanda), not quantization / pruning.
  REQUIRE(d.by_family.size() == 4);
  CHECK(d.by_family[0].family == "rtn");
  CHECK(d.by_family[1].family == "awq");
  CHECK(d.by_family[3].family == "wanda");
  CHECK(d.by_family[0].remaining == 12);
  CHECK(a.families == std::vector<std::string>{"rtn", "awq", "magnitude", "wanda"});
  REQUIRE(a.best.has_value());
  const PredictorInfo& best = a.predictors.predictors[*a.best];
  CHECK(best.quantity == "perp");
  // The ranking follows ΔNLL.
  for (size_t k = 1; k < a.order.size(); ++k) CHECK(f.runs[a.order[k - 1]].delta_nll <= f.runs[a.order[k]].delta_nll);
  // Every (predictor, outcome) cell has four coefficients over the runs that have the outcome.
  const size_t acc = a.outcomes.Find("lm_eval.blimp_agr.acc");
  CHECK(a.Cell(acc, 0).n == 13);
  CHECK(a.Cell(0, 0).by_coefficient.size() == 4);
  // Cosine falls with damage: its Spearman ρ against ΔNLL is negative, its strength positive.
  const size_t cos = *a.FindPredictor("cos.mean.block_output.accumulated.mean");
  CHECK(*a.Cell(a.outcome, cos).at(pc::reports::Coefficient::kSpearman).estimate.value < 0);
  CHECK(*a.Strength(a.outcome, cos) > 0);
  REQUIRE(a.main_left_out.size() == a.main.size());
  CHECK(a.main_left_out[0].size() == 4);  // the four method families of the fixture

  const std::string h = pc::reports::Headline(s, a);
  CHECK_THAT(h, Contains("16 runs of sweep 'fixture-sweep'") && Contains("exploratory — best predictor: perp.") &&
                    Contains("primary comparisons, declared before looking") &&
                    Contains("ratio.block_output.accumulated.mean: ρ(perp) − ρ(iso) = ") &&
                    Contains("the interval excludes 0: perp predicts delta_nll better than iso in this sweep") &&
                    Contains("held-out check: chosen on a random half of 8 runs"));
  // The primary comparisons come first, the best of many after them, marked exploratory.
  CHECK(h.find("primary comparisons") < h.find("exploratory"));
  // The split-half check: every split chose a predictor and measured it on the other half.
  CHECK(a.held_out.detail.empty());
  CHECK(a.held_out.held_out.size() == a.held_out.splits);
  CHECK(a.held_out.q10 <= a.held_out.median);
  CHECK(a.held_out.median <= a.held_out.q90);
  CHECK(a.held_out.median <= a.held_out.in_sample_median + 1e-12);  // the chosen half flatters it
  // Declared primary comparisons replace the defaults.
  pc::reports::RankOptions declared = o;
  declared.primary = {{"perp.ratio.block_output.accumulated.final", "iso.ratio.block_output.accumulated.final"}};
  const pc::reports::RankingAnalysis ad = pc::reports::AnalyzeSweep(s, declared);
  CHECK(ad.main_differences == 1);
  CHECK(ad.differences[0].perp == "perp.ratio.block_output.accumulated.final");

  // A seed reproduces every number; another seed changes the intervals.
  const pc::reports::RankingAnalysis again = pc::reports::AnalyzeSweep(s, o);
  CHECK(*again.differences[0].all.lo == *d.all.lo);
  CHECK(again.differences[0].all.samples == d.all.samples);
  CHECK(*again.Cell(0, 5).at(pc::reports::Coefficient::kKendallTauB).hi ==
        *a.Cell(0, 5).at(pc::reports::Coefficient::kKendallTauB).hi);
  pc::reports::RankOptions other = o;
  other.bootstrap.seed = 4;
  CHECK(pc::reports::AnalyzeSweep(s, other).differences[0].all.samples != d.all.samples);

  o.outcome = "nope";
  CHECK_THROWS_WITH(pc::reports::AnalyzeSweep(s, o), Contains("--outcome: 'nope' is not an outcome"));
}

TEST_CASE("rank: one run gives the ranking and 'insufficient' everywhere else", "[reports][rank]") {
  const pc::reports::SweepResults s = pc::reports::ReadSweepResults(WriteFixture(pc::test::DefaultFixture(1)));
  const pc::reports::RankingAnalysis a = pc::reports::AnalyzeSweep(s, FastOptions());
  CHECK_FALSE(a.best.has_value());
  CHECK(a.Cell(0, 0).at(pc::reports::Coefficient::kPearson).estimate.reason == "insufficient");
  CHECK(a.differences[0].all.estimate.reason == "insufficient");
  CHECK(a.order == std::vector<size_t>{0});
  CHECK_THAT(pc::reports::Headline(s, a),
             Contains("best predictor: none — 1 run with delta_nll; a correlation needs at least 5 "
                      "runs (insufficient)"));
  const pc::reports::RankReport r = pc::reports::BuildRankReport(s, a, {"perpcomp rank x", "perpcomp test"});
  // Histograms: the primary pairs present (3 at the block outputs, the paper-frame attention and MLP
  // updates; the fixture has no block_update rows).
  CHECK(r.html_figures == 5 /*histograms*/ + 1 /*bars*/ + 9 /*scatter*/ + 1 /*profile*/);
}

TEST_CASE("rank: the report's files, tables and figures", "[reports][rank]") {
  const pc::test::SweepFixture f = pc::test::DefaultFixture(8);
  const pc::reports::SweepResults s = pc::reports::ReadSweepResults(WriteFixture(f));
  pc::reports::RankOptions o = FastOptions();
  o.predictors = "*.block_output.*,*.logits.*,weight.*";
  const pc::reports::RankingAnalysis a = pc::reports::AnalyzeSweep(s, o);
  const pc::reports::RankReport r = pc::reports::BuildRankReport(s, a, {"perpcomp rank x.h5 --out y", "perpcomp test"});
  std::map<std::string, std::string> files;
  for (const auto& file : r.files) files[file.name] = file.content;
  for (const char* name : {"report.html",
                           "report.md",
                           "ranking.csv",
                           "correlations.csv",
                           "top_predictors.csv",
                           "outcomes.csv",
                           "perp_vs_iso.csv",
                           "perp_vs_iso_by_site.csv",
                           "perp_vs_iso_by_family.csv",
                           "leave_one_family_out.csv",
                           "runs.csv",
                           "runs_full.csv",
                           "conventions.csv",
                           "outcome_definitions.csv",
                           "predictor_definitions.csv",
                           "differences.csv",
                           "difference_samples.csv",
                           "predictor_values.csv",
                           "ranking_all_predictors.csv",
                           "outcome_values.csv",
                           "predictors.csv"}) {
    INFO(name);
    CHECK(files.count(name) == 1);
  }
  const std::string& html = files["report.html"];
  auto count = [](const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  CHECK(count(html, "<table>") == r.html_tables);
  CHECK(count(html, "<svg") == r.html_figures);
  CHECK(r.html_tables == 12);
  CHECK(r.html_figures == 1 /*best*/ + 1 /*bars*/ + 9 /*scatter*/ + 3 /*histograms*/ + 8 /*profiles*/);
  // Self-contained: no URL but the SVG namespace, no script, no external resource.
  CHECK(pc::ReplaceAll(html, "xmlns=\"http://www.w3.org/2000/svg\"", "").find("http") == std::string::npos);
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find(" src=") == std::string::npos);
  CHECK_THAT(html, Contains("conventions.eval_sha256") && Contains("seed 0") && Contains("300 resamples (B)") &&
                       Contains("calib.txt (sha256 ") && Contains("perpcomp rank x.h5 --out y"));
  // The calibration a run got: AWQ's windowing (the quantization runs) gave 3 windows of the 8 requested,
  // the pruners' random windows all 8.
  CHECK_THAT(files["runs.csv"], Contains("awq, 3 × 64 tokens (8 requested), seed 0") &&
                                    Contains("wanda, 8 × 64 tokens, seed 0") && !Contains("awq, 8 × 64"));
  // Markdown holds the same tables (a delimiter row per table).
  CHECK(count(files["report.md"], "\n| :--") + count(files["report.md"], "\n| --") >= r.html_tables);
  // correlations.csv: every predictor × outcome × coefficient, plus the header.
  CHECK(count(files["correlations.csv"], "\r\n") ==
        1 + a.predictors.predictors.size() * a.outcomes.outcomes.size() * 4);
  if (pc::test::HavePython("xml.etree.ElementTree")) {
    const std::string dir = pc::test::TempDir("rank-xml");
    pc::test::WriteText(dir + "/report.html", html);
    const std::string out = pc::test::RunPythonScript(
        "import sys, xml.etree.ElementTree as ET\n"
        "root = ET.parse(sys.argv[1]).getroot()\n"
        "print(sum(1 for e in root.iter() if e.tag.endswith('table')), sum(1 for e in root.iter() if "
        "e.tag.endswith('}svg') or e.tag == 'svg'))\n",
        "'" + dir + "/report.html'");
    CHECK(pc::Trim(out) == pc::Str(r.html_tables, " ", r.html_figures));
  }
}

TEST_CASE("rank: the first differing convention is named by its path", "[reports][rank]") {
  using pc::reports::FirstConventionDifference;
  CHECK(FirstConventionDifference(R"({"a":1,"b":{"c":2}})", R"({"b":{"c":2},"a":1})") == "");
  CHECK(FirstConventionDifference(R"({"a":1,"calib":{"samples":128}})", R"({"a":1,"calib":{"samples":64}})") ==
        "'calib.samples': 128 vs 64");
  CHECK(FirstConventionDifference(R"({"pairs":[{"sha256":"x"}]})", R"({"pairs":[{"sha256":"y"}]})") ==
        "'pairs[0].sha256': \"x\" vs \"y\"");
  CHECK(FirstConventionDifference(R"({"a":1})", R"({"a":1,"b":2})") == "'b': absent vs 2");
  CHECK(FirstConventionDifference("not json", "also not") == "the conventions texts differ");
}

TEST_CASE("rank: method families for leave-one-family-out", "[reports][rank]") {
  using pc::reports::MethodFamily;
  for (const char* m : {"rtn", "awq", "perp-awq", "gptq", "magnitude", "wanda", "wanda-perp"}) CHECK(MethodFamily(m, "") == m);
  CHECK(MethodFamily("sparsegpt", R"({"sparsity": 0.5})") == "sparsegpt");
  CHECK(MethodFamily("sparsegpt", R"({"sparsity": 0.5, "bits": 0})") == "sparsegpt");
  CHECK(MethodFamily("sparsegpt", R"({"sparsity": 0.5, "bits": 4})") == "joint");
  CHECK(MethodFamily("gptq", R"({"bits": 4})") == "gptq");
}

TEST_CASE("rank: --runs selects runs by family and by outcome, and refuses bad terms", "[reports][rank]") {
  using pc::reports::SelectRuns;
  const pc::reports::SweepResults all = pc::reports::ReadSweepResults(WriteFixture(pc::test::DefaultFixture(12)));
  REQUIRE(all.runs.size() == 12);
  CHECK(all.runs_in_file == 12);
  CHECK(all.selection.empty());
  auto names = [](const pc::reports::SweepResults& s) {
    std::vector<std::string> out;
    for (const auto& r : s.runs) out.push_back(r.name);
    return out;
  };
  auto expected = [&](const std::function<bool(const pc::reports::SweepRun&)>& keep) {
    std::vector<std::string> out;
    for (const auto& r : all.runs) {
      if (keep(r)) out.push_back(r.name);
    }
    return out;
  };

  const pc::reports::SweepResults quant = SelectRuns(all, "family=quantization");
  CHECK(quant.runs.size() == 6);
  CHECK(quant.runs_in_file == 12);
  CHECK(quant.selection == "family=quantization");
  CHECK(names(quant) == expected([](const auto& r) { return r.family == "quantization"; }));
  CHECK(names(SelectRuns(all, "family=wanda | rtn")) ==
        expected([](const auto& r) { return r.method == "wanda" || r.method == "rtn"; }));

  // A threshold between the runs' ΔNLL values: the median of the distinct values.
  std::vector<double> dnll;
  for (const auto& r : all.runs) dnll.push_back(r.downstream.at("delta_nll"));
  std::sort(dnll.begin(), dnll.end());
  const double mid = 0.5 * (dnll[5] + dnll[6]);
  REQUIRE(dnll[5] < dnll[6]);
  const std::string below = "delta_nll<" + std::to_string(mid);
  CHECK(names(SelectRuns(all, below)) == expected([&](const auto& r) { return r.downstream.at("delta_nll") < mid; }));
  CHECK(SelectRuns(all, below).runs.size() == 6);
  CHECK(names(SelectRuns(all, "delta_nll>=" + std::to_string(mid))) ==
        expected([&](const auto& r) { return r.downstream.at("delta_nll") >= mid; }));
  CHECK(SelectRuns(all, "delta_nll<=" + std::to_string(dnll[0])).runs.size() == 1);
  CHECK(SelectRuns(all, "delta_nll>" + std::to_string(dnll[0])).runs.size() == 11);
  // Terms are joined: pruning runs below the median.
  CHECK(names(SelectRuns(all, "family=pruning, " + below)) == expected([&](const auto& r) {
          return r.family == "pruning" && r.downstream.at("delta_nll") < mid;
        }));

  // By name: run=A|B keeps those, run!=A|B drops them; combined with the other terms.
  const std::string first = all.runs[0].name, second = all.runs[1].name;
  CHECK(names(SelectRuns(all, "run=" + first + "|" + second)) == std::vector<std::string>{first, second});
  CHECK(names(SelectRuns(all, "run!=" + first)) == expected([&](const auto& r) { return r.name != first; }));
  CHECK(names(SelectRuns(all, "run!=" + first + " , family=pruning")) ==
        expected([&](const auto& r) { return r.name != first && r.family == "pruning"; }));
  CHECK_THROWS_WITH(SelectRuns(all, "run=nosuch"), Contains("--runs 'run=nosuch'") && Contains("has no run 'nosuch'"));
  CHECK_THROWS_WITH(SelectRuns(all, "run!=" + first + "|"), Contains("got an empty name"));

  CHECK_THROWS_WITH(SelectRuns(all, "family=foo"),
                    Contains("--runs 'family=foo': no run of") && Contains("has family 'foo'") &&
                        Contains("quantization") && Contains("wanda"));
  CHECK_THROWS_WITH(SelectRuns(all, "family="), Contains("got an empty name"));
  CHECK_THROWS_WITH(SelectRuns(all, "nll<1"), Contains("'nll' is not an outcome") && Contains("delta_nll"));
  CHECK_THROWS_WITH(SelectRuns(all, "delta_nll<abc"), Contains("--runs 'delta_nll<abc': expected a number, got 'abc'"));
  CHECK_THROWS_WITH(SelectRuns(all, "<1"), Contains("expected an outcome name before '<'"));
  CHECK_THROWS_WITH(SelectRuns(all, "pruning"), Contains("expected family=NAME[|NAME...], run=NAME[|NAME...], run!=NAME[|NAME...] or OUTCOME<X"));
  CHECK_THROWS_WITH(SelectRuns(all, "family=pruning,"), Contains("an empty term"));
  CHECK_THROWS_WITH(SelectRuns(all, " "), Contains("got an empty value"));
  CHECK_THROWS_WITH(SelectRuns(all, "delta_nll<-1e9"), Contains("no run of") && Contains("meets it (12 runs)"));

  // The analysis and the report say what was selected.
  const pc::reports::RankingAnalysis a = pc::reports::AnalyzeSweep(quant, FastOptions());
  CHECK_THAT(pc::reports::Headline(quant, a),
             Contains("6 runs of sweep 'fixture-sweep' (selected by --runs 'family=quantization': 6 of the file's 12); "
                      "families: rtn 3, awq 3"));
}
