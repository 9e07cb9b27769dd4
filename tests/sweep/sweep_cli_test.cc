// `perpcomp sweep` end to end on a tiny model: --dry-run, a three-run sweep with its results
// layout, resuming, refusals, SIGKILL at several points of a run, shards + merge.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "core/fs.h"
#include "core/sha256.h"
#include "core/strings.h"
#include "store/file.h"
#include "tests/sweep/sweep_test_util.h"

using Catch::Matchers::Contains;
using pc::test::RunPerpcomp;

namespace {

namespace stdfs = std::filesystem;

std::string Q(const std::string& s) { return "'" + s + "'"; }

bool Exists(const std::string& p) { return stdfs::exists(p); }

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : stdfs::directory_iterator(dir, ec)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// The clean three-run sweep of a fixture: results file and the sha256 of its first run file.
struct CleanRun {
  std::string out, work, first_run_sha;
};
CleanRun RunClean(const pc::test::SweepFixture& f, const std::string& sweep, const std::string& name) {
  CleanRun c;
  c.out = f.dir + "/" + name + ".h5";
  c.work = f.dir + "/" + name + ".work";
  auto r = RunPerpcomp("sweep " + f.Args(sweep, c.out));
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  c.first_run_sha = pc::Sha256File(c.work + "/runs/0-rtn-w4g32.h5");
  return c;
}

// The runs a sweep's --dry-run lists from its grids (a line each, ending in "grid at FILE:LINE").
int GridRuns(const std::string& out) {
  int n = 0;
  for (const auto& l : pc::Split(out, '\n')) n += l.find("grid at") != std::string::npos;
  return n;
}

}  // namespace

TEST_CASE("sweep --dry-run lists the expanded runs of the shipped sweeps and touches nothing", "[sweep]") {
  const std::string dir = pc::test::TempDir("sweep-dry");
  const std::string sweeps = pc::test::SourceDir() + "/recipes/sweeps/";
  auto r = RunPerpcomp("sweep --sweep " + Q(sweeps + "default.yaml") + " --dry-run --out " + Q(dir + "/r.h5"));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("sweep 'default'") && Contains("index") && Contains("origin"));
  for (const char* m : {"rtn", "awq", "perp-awq", "gptq", "magnitude", "wanda", "wanda-perp", "sparsegpt"}) {
    CHECK_THAT(r.out, Contains(std::string("  ") + m + "  "));
  }
  const auto lines = pc::Split(r.out, '\n');
  int runs = 0;
  for (const auto& l : lines) runs += (l.size() > 5 && l.find("entry at") != std::string::npos) ||
                                      (l.find("grid at") != std::string::npos);
  CHECK(runs >= 16);
  CHECK(Entries(dir).empty());  // no results, no work folder

  auto demo = RunPerpcomp("sweep --sweep " + Q(sweeps + "demo.yaml") + " --dry-run");
  INFO(demo.err);
  REQUIRE(demo.exit_code == 0);
  CHECK_THAT(demo.out, Contains("sweep 'demo'") && Contains("rtn-w3g32") && Contains("sparsegpt-50"));

  // The study (docs/SCIENCE.md "Compression at 135M"): 97 runs, the text repeats included.
  auto study = RunPerpcomp("sweep --sweep " + Q(sweeps + "study.yaml") + " --dry-run");
  INFO(study.err);
  REQUIRE(study.exit_code == 0);
  CHECK_THAT(study.out, Contains("sweep 'study'") && Contains("gptq-w3g-1") && Contains("awq-w4g128-wiki") &&
                            Contains("sparsegpt-50-self"));
  CHECK(GridRuns(study.out) == 97);

  // Its pilot (one session): 24 runs, 8 calibration windows each.
  auto pilot = RunPerpcomp("sweep --sweep " + Q(sweeps + "study-pilot.yaml") + " --dry-run");
  INFO(pilot.err);
  REQUIRE(pilot.exit_code == 0);
  CHECK_THAT(pilot.out, Contains("sweep 'study-pilot'") && Contains("rtn-w3g-1") && Contains("rtn-w8g64") &&
                            Contains("perp-awq-w3g32") && Contains("sparsegpt-2of4"));
  CHECK(GridRuns(pilot.out) == 24);

  // Its second half: 26 other recipes at the pilot's settings and the check run (the pilot's rtn-w4g32).
  auto half = RunPerpcomp("sweep --sweep " + Q(sweeps + "study-pilot-2.yaml") + " --dry-run");
  INFO(half.err);
  REQUIRE(half.exit_code == 0);
  CHECK_THAT(half.out, Contains("sweep 'study-pilot-2'") && Contains("gptq-w2g32") && Contains("sparsegpt-s0.5-w4g128") &&
                           Contains("awq-w4g32-seed1") && Contains("rtn-w4g32"));
  for (const auto& l : pc::Split(half.out, '\n')) {
    // No recipe of the pilot but the check run: the two halves join by run name.
    for (const char* pilot_only : {"rtn-w3g32", "gptq-w4g32 ", "wanda-s0.5 ", "awq-w4g32 "}) {
      CHECK(l.find(pilot_only) == std::string::npos);
    }
  }
  CHECK(GridRuns(half.out) == 27);

  // The calibration noise floor at the pilot's settings: four pilot recipes on other sizes and texts,
  // none under a name of the pilot's (the three join by run name).
  auto noise = RunPerpcomp("sweep --sweep " + Q(sweeps + "study-pilot-3.yaml") + " --dry-run");
  INFO(noise.err);
  REQUIRE(noise.exit_code == 0);
  CHECK_THAT(noise.out, Contains("sweep 'study-pilot-3'") && Contains("awq-w4g32-wiki") && Contains("gptq-w4g32-self") &&
                            Contains("sparsegpt-s0.5-n128") && Contains("awq-w4g32-n32"));
  for (const auto& l : pc::Split(noise.out, '\n')) {
    for (const char* pilot_only : {"gptq-w4g32 ", "wanda-s0.5 ", "awq-w4g32 ", "sparsegpt-s0.5 "}) {
      CHECK(l.find(pilot_only) == std::string::npos);
    }
  }
  CHECK(GridRuns(noise.out) == 15);

  // A shard lists only its runs: indices 1, 4, 7, 10, 13 of 3 shards.
  auto shard = RunPerpcomp("sweep --sweep " + Q(sweeps + "demo.yaml") + " --dry-run --shard 1/3");
  REQUIRE(shard.exit_code == 0);
  CHECK_THAT(shard.out, Contains("shard 1/3: 5 runs"));
  CHECK_THAT(shard.out, Contains("    1  ") && Contains("    4  ") && Contains("    7  ") && Contains("   13  "));
  CHECK_THAT(shard.out, !Contains("    0  ") && !Contains("    2  "));
}

TEST_CASE("sweep: bad sweep files and options are refused with file:line", "[sweep]") {
  const std::string dir = pc::test::TempDir("sweep-bad");
  auto dry = [&](const std::string& name, const std::string& yaml, const std::string& extra = "") {
    std::string path = pc::test::WriteTextFile(dir, name, yaml);
    return RunPerpcomp("sweep --sweep " + Q(path) + " --dry-run " + extra);
  };
  auto empty = dry("empty.yaml", "name: e\ngrids:\n  - method: rtn\n    params: {bits: [], group_size: 32}\n");
  CHECK(empty.exit_code == 1);
  CHECK_THAT(empty.err, Contains("empty.yaml:4: grid axis 'bits' is an empty list") && Contains("zero runs"));

  auto dup = dry("dup.yaml",
                 "name: d\nruns:\n  - recipe: rtn-w4g128\ngrids:\n  - method: rtn\n    name: 'rtn-w{bits}g128'\n"
                 "    params: {bits: [3, 4], group_size: 128}\n");
  CHECK(dup.exit_code == 1);
  CHECK_THAT(dup.err, Contains("duplicate run names") && Contains("'rtn-w4g128'") && Contains("dup.yaml:3") &&
                          Contains("dup.yaml:5"));

  auto param = dry("param.yaml", "name: p\ngrids:\n  - method: rtn\n    params: {bitz: [3, 4]}\n");
  CHECK(param.exit_code == 1);
  CHECK_THAT(param.err, Contains("param.yaml:4") && Contains("bitz"));

  auto method = dry("method.yaml", "name: m\ngrids:\n  - method: rtnn\n    params: {bits: [3, 4]}\n");
  CHECK(method.exit_code == 1);
  CHECK_THAT(method.err, Contains("method.yaml:3") && Contains("rtnn"));

  auto shard = dry("ok.yaml", "name: ok\nruns:\n  - recipe: rtn-w4g128\n", "--shard 3/3");
  CHECK(shard.exit_code == 1);
  CHECK_THAT(shard.err, Contains("--shard") && Contains("0 <= K < N"));

  auto missing = RunPerpcomp("sweep --sweep " + Q(dir + "/ok.yaml") + " --out " + Q(dir + "/r.h5"));
  CHECK(missing.exit_code == 1);
  CHECK_THAT(missing.err, Contains("--model is required"));
  CHECK(!Exists(dir + "/r.h5"));
}

TEST_CASE("sweep: three runs end to end, the results layout, resume skips finished runs", "[sweep][slow]") {
  const pc::test::SweepFixture f = pc::test::MakeSweepFixture("e2e");
  const std::string sweep = pc::test::ThreeRunSweep(f.dir);
  const CleanRun c = RunClean(f, sweep, "results");

  {
    pc::store::File res = pc::store::File::OpenRead(c.out, pc::store::kind::kSweepResults);
    const pc::store::Group root = res.root();
    CHECK(root.GetAttr<std::string>("sweep") == "three");
    CHECK(root.GetAttr<int64_t>("runs_total") == 3);
    CHECK(root.GetAttr<int64_t>("runs_complete") == 3);
    CHECK(root.GetAttr<std::string>("shard").empty());
    CHECK(root.GetAttr<double>("reference_ppl") > 1);
    CHECK(root.GetAttr<double>("reference_pairs_accuracy") >= 0);
    CHECK_THAT(root.GetAttr<std::string>("sweep_yaml"), Contains("name: three"));
    const auto conventions = nlohmann::json::parse(root.GetAttr<std::string>("conventions"));
    for (const char* k : {"model", "model_hash", "eval_text", "eval_sha256", "seq_len", "windows", "pairs", "calib",
                          "metrics_conventions", "perpcomp"}) {
      CHECK(conventions.contains(k));
    }
    CHECK(conventions["seq_len"] == 32);
    CHECK(conventions["calib"]["samples"] == 8);
    CHECK(pc::Sha256Hex(conventions.dump()) == root.GetAttr<std::string>("conventions_key"));
    CHECK(pc::test::ResultRuns(c.out) == std::vector<std::string>{"rtn-w4g32", "awq-w4g32", "wanda-50"});
    CHECK(root.OpenGroup("reference").IsGroup("pairs"));

    const pc::store::Group awq = root.OpenGroup("runs/awq-w4g32");
    CHECK(awq.GetAttr<std::string>("status") == "complete");
    CHECK(awq.GetAttr<int64_t>("index") == 1);
    CHECK(awq.GetAttr<std::string>("method") == "awq");
    CHECK(awq.GetAttr<std::string>("family") == "quantization");
    CHECK(root.OpenGroup("runs/wanda-50").GetAttr<std::string>("family") == "pruning");
    const auto params = nlohmann::json::parse(awq.GetAttr<std::string>("params"));
    CHECK(params["group_size"] == 32);
    CHECK(params["n_grid"] == 10);
    CHECK(params["bits"] == 4);  // from the base recipe
    CHECK(params.contains("clip"));  // a default filled in by the registry
    CHECK_THAT(awq.GetAttr<std::string>("recipe_yaml"), Contains("name: awq-w4g32\n"));
    CHECK(nlohmann::json::parse(awq.GetAttr<std::string>("compression"))["recipe"] == "awq-w4g32");
    CHECK(awq.GetAttr<std::string>("conventions_key") == root.GetAttr<std::string>("conventions_key"));
    for (const char* s : {"seconds_compress", "seconds_measure", "seconds_eval"}) CHECK(awq.GetAttr<double>(s) > 0);
    CHECK(awq.IsTable("sites"));
    CHECK(awq.IsTable("weights"));
    CHECK(awq.OpenGroup("downstream").GetAttr<double>("kl_mean") > 0);
    const pc::store::Group pairs = awq.OpenGroup("pairs");
    CHECK(pairs.GetAttr<double>("accuracy_drop") ==
          Approx(pairs.GetAttr<double>("ref_accuracy") - pairs.GetAttr<double>("accuracy")));
    CHECK(pairs.ReadTable("files").Has("accuracy_drop"));
    CHECK(awq.OpenGroup("compress").IsTable("linears"));
    CHECK(awq.OpenGroup("compress").GetAttr<std::string>("method") == "awq");
  }
  CHECK(Entries(c.work + "/models").empty());  // checkpoints deleted without --keep-models
  CHECK(Entries(c.work + "/runs") ==
        std::vector<std::string>{"0-rtn-w4g32.h5", "1-awq-w4g32.h5", "2-wanda-50.h5"});

  // The same invocation again: every run is skipped, the run files are untouched.
  const std::string before = pc::Sha256File(c.work + "/runs/2-wanda-50.h5");
  auto again = RunPerpcomp("sweep " + f.Args(sweep, c.out));
  INFO(again.err);
  REQUIRE(again.exit_code == 0);
  CHECK_THAT(again.out, Contains("3 of 3 runs complete (0 now, 3 earlier)"));
  CHECK_THAT(again.err, Contains("skipping 3 finished run(s)") && !Contains("compress:"));
  CHECK(pc::Sha256File(c.work + "/runs/0-rtn-w4g32.h5") == c.first_run_sha);
  CHECK(pc::Sha256File(c.work + "/runs/2-wanda-50.h5") == before);
  pc::test::CheckSameResults(c.out, c.out);

  // A run added to the sweep file: only it runs; results hold all four.
  const std::string four = pc::test::WriteTextFile(
      f.dir, "four.yaml", pc::fs::ReadFile(sweep) + "  - recipe: magnitude-50\n");
  auto more = RunPerpcomp("sweep " + f.Args(four, c.out));
  INFO(more.err);
  REQUIRE(more.exit_code == 0);
  CHECK_THAT(more.out, Contains("4 of 4 runs complete (1 now, 3 earlier)") && Contains("magnitude-50"));
  CHECK(pc::test::ResultRuns(c.out).size() == 4);

  // lm-evaluation-harness results appearing later are imported into the finished run.
  const std::string lm = pc::test::TempDir("sweep-lm");
  pc::test::WriteTextFile(lm, "wanda-50.json", R"({"results": {"arc_easy": {"acc,none": 0.43}}})");
  auto imported = RunPerpcomp("sweep " + f.Args(four, c.out) + " --import-lm-eval " + Q(lm));
  INFO(imported.err);
  REQUIRE(imported.exit_code == 0);
  CHECK_THAT(imported.out, Contains("(0 now, 4 earlier)"));
  CHECK_THAT(imported.err, Contains("imported") && Contains("wanda-50"));
  {
    pc::store::File res = pc::store::File::OpenRead(c.out, pc::store::kind::kSweepResults);
    const pc::store::Group g = res.root().OpenGroup("runs/wanda-50/lm_eval");
    CHECK(g.ReadTable("scores").Get<double>("value") == std::vector<double>{0.43});
    CHECK(!res.root().OpenGroup("runs/awq-w4g32").Has("lm_eval"));
  }
  CHECK(pc::Sha256File(c.work + "/runs/0-rtn-w4g32.h5") == c.first_run_sha);

  // Other conventions: refused before any work, naming what differs and how to start over.
  pc::test::SweepFixture fewer = f;
  fewer.max_windows = 6;
  auto other = RunPerpcomp("sweep " + fewer.Args(sweep, c.out));
  CHECK(other.exit_code == 1);
  CHECK_THAT(other.err, Contains("other conventions") && Contains("'windows' was 12 and is now 6") &&
                            Contains("start over"));
  pc::test::SweepFixture calib = f;
  calib.calib_samples = 4;
  auto other_work = RunPerpcomp("sweep " + calib.Args(sweep, f.dir + "/other.h5") + " --work " + Q(c.work));
  CHECK(other_work.exit_code == 1);
  CHECK_THAT(other_work.err, Contains("the work folder") && Contains("'calib.samples' was 8 and is now 4") &&
                                 Contains("delete"));
  CHECK(!Exists(f.dir + "/other.h5"));

  // --out that is not a sweep-results file.
  const std::string foreign = pc::test::WriteTextFile(f.dir, "foreign.h5", "not hdf5");
  auto refuse = RunPerpcomp("sweep " + f.Args(sweep, foreign));
  CHECK(refuse.exit_code == 1);
  CHECK_THAT(refuse.err, Contains("--out: refusing to replace") && Contains("is not an HDF5 file"));
}

// The dry run prints the calibration the run will use (calibration/calib_set.h ResolveCalib, the
// resolver BuildCalibSet records with): self:8 is 8 self-sampled windows, not the recipe's
// "128 samples x 512 tokens, random windowing".
TEST_CASE("compress --dry-run shows the calibration that will actually run", "[sweep]") {
  pc::test::SweepFixture f = pc::test::MakeSweepFixture("compress-dry-run");
  auto r = RunPerpcomp("compress --model " + Q(f.model) + " --recipe gptq-w4g128 --calib self:8 --dry-run");
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("calibration: self:8, 8 self-sampled windows x "));
  CHECK_THAT(r.out, !Contains("128 samples"));
  CHECK_THAT(r.out, !Contains("random windowing"));
  auto t = RunPerpcomp("compress --model " + Q(f.model) + " --recipe gptq-w4g128 --calib " + Q(f.text) +
                       " --calib-samples 5 --dry-run");
  INFO(t.out << t.err);
  REQUIRE(t.exit_code == 0);
  CHECK_THAT(t.out, Contains(", 5 samples x "));
  CHECK_THAT(t.out, Contains("random windowing"));
}

// A run that throws inside a sweep (here an injected failure of the second run's measurement)
// is recorded as failed in its run file with the message, the sweep goes on with the third
// run, the summary and `rank` report it, a resume does not retry it, --retry-failed does.
TEST_CASE("sweep: a failing run is recorded, the sweep goes on, and it is retried only on request", "[sweep]") {
  pc::test::SweepFixture f = pc::test::MakeSweepFixture("sweep-failed-run");
  const std::string sweep = pc::test::ThreeRunSweep(f.dir);
  const std::string out = f.dir + "/r.h5", work = f.dir + "/r.work";
  const std::string bin = Q(pc::test::PerpcompBin());
  auto r = pc::test::Run("PERPCOMP_TEST_CRASH=awq-w4g32:measure:throw " + bin + " sweep " + f.Args(sweep, out));
  INFO(r.out << r.err);
  CHECK(r.exit_code == 3);
  CHECK_THAT(r.out, Contains("awq-w4g32") && Contains("FAILED: injected failure of run 'awq-w4g32' at measure"));
  CHECK_THAT(r.out, Contains("1 run(s) failed (1 now, 0 earlier"));
  CHECK(pc::test::ResultRuns(out) == std::vector<std::string>{"rtn-w4g32", "wanda-50"});  // the third run ran
  {
    pc::store::File run = pc::store::File::OpenRead(work + "/runs/1-awq-w4g32.h5");
    const pc::store::Group g = run.root().OpenGroup("runs/awq-w4g32");
    CHECK(g.GetAttr<std::string>("status") == "failed");
    CHECK_THAT(g.GetAttr<std::string>("error"), Contains("injected failure"));
    pc::store::File res = pc::store::File::OpenRead(out);
    CHECK_THAT(res.root().GetAttr<std::string>("failed_runs"), Contains("awq-w4g32"));
  }
  auto rank = RunPerpcomp("rank " + Q(out) + " --out " + Q(f.dir + "/rank") + " --bootstrap 50");
  INFO(rank.out << rank.err);
  CHECK_THAT(rank.out, Contains("1 run failed and is not ranked: awq-w4g32 (injected failure"));
  // Resumed without the fault: the failed run is reported, not retried.
  auto again = RunPerpcomp("sweep " + f.Args(sweep, out));
  INFO(again.out << again.err);
  CHECK(again.exit_code == 3);
  CHECK_THAT(again.out, Contains("1 run(s) failed (0 now, 1 earlier"));
  CHECK(pc::test::ResultRuns(out).size() == 2);
  // --retry-failed runs it.
  auto retry = RunPerpcomp("sweep " + f.Args(sweep, out) + " --retry-failed");
  INFO(retry.out << retry.err);
  CHECK(retry.exit_code == 0);
  CHECK(pc::test::ResultRuns(out) == std::vector<std::string>{"rtn-w4g32", "awq-w4g32", "wanda-50"});
  pc::store::File res = pc::store::File::OpenRead(out);
  CHECK(!res.root().HasAttr("failed_runs"));
}

// `calibration: text: NAME` in a recipe or grid selects the file bound by --calib-text NAME=FILE
// (the study's repeats on other texts); runs that name none use --calib. Unbound names and bad
// --calib-text values are refused before anything runs.
TEST_CASE("sweep and compress: calibration text chosen per grid with --calib-text, --max-pairs", "[sweep]") {
  pc::test::SweepFixture f = pc::test::MakeSweepFixture("calib-text");
  // A second calibration text: the fixture's text reversed line by line (other windows, other hash).
  std::string other_text;
  {
    std::vector<std::string> lines = pc::Split(pc::fs::ReadFile(f.text), '\n');
    std::reverse(lines.begin(), lines.end());
    for (const auto& l : lines) other_text += l + "\n";
  }
  const std::string other = pc::test::WriteTextFile(f.dir, "other.txt", other_text);
  const std::string recipe = pc::test::WriteTextFile(
      f.dir, "r.yaml", "name: rtn-other\nmethod: rtn\nparams: {bits: 4, group_size: 32}\ncalibration:\n  text: other\n");

  // compress: the recipe's text is the bound file; unbound, the error names the recipe line.
  auto dry = RunPerpcomp("compress --model " + Q(f.model) + " --recipe " + Q(recipe) + " --calib " + Q(f.text) +
                         " --calib-text other=" + Q(other) + " --dry-run");
  INFO(dry.out << dry.err);
  REQUIRE(dry.exit_code == 0);
  CHECK_THAT(dry.out, Contains("calibration: " + other));
  auto unbound = RunPerpcomp("compress --model " + Q(f.model) + " --recipe " + Q(recipe) + " --calib " +
                             Q(f.text) + " --dry-run");
  CHECK(unbound.exit_code == 1);
  CHECK_THAT(unbound.err, Contains("r.yaml:5: calibration text 'other' is not given: pass --calib-text other=FILE") &&
                              Contains("no --calib-text was given"));
  for (const auto& [spec, message] : std::vector<std::pair<std::string, std::string>>{
           {"other", "must be NAME=FILE"},
           {"=x.txt", "must be NAME=FILE"},
           {"a%b=" + other, "the name 'a%b' must start with a letter or digit"},
           {"other=" + f.dir + "/absent.txt", "does not exist"},
           {"other=" + f.dir, "expected a regular file"},
       }) {
    auto bad = RunPerpcomp("compress --model " + Q(f.model) + " --recipe " + Q(recipe) + " --calib " + Q(f.text) +
                           " --calib-text " + Q(spec) + " --dry-run");
    INFO(spec << ": " << bad.err);
    CHECK(bad.exit_code == 1);
    CHECK_THAT(bad.err, Contains("--calib-text") && Contains(message));
  }
  auto twice = RunPerpcomp("compress --model " + Q(f.model) + " --recipe " + Q(recipe) + " --calib " + Q(f.text) +
                           " --calib-text other=" + Q(other) + " --calib-text other=" + Q(f.text) + " --dry-run");
  CHECK(twice.exit_code == 1);
  CHECK_THAT(twice.err, Contains("--calib-text names 'other' twice"));

  // sweep: one run on --calib, one grid on the bound text, one on self-sampling.
  const std::string sweep = pc::test::WriteTextFile(
      f.dir, "texts.yaml",
      "name: texts\nruns:\n  - recipe: rtn-w4g128\n    name: rtn-default\n    params: {group_size: 32}\n"
      "grids:\n  - recipe: rtn-w4g128\n    name: rtn-other\n    params: {group_size: 32}\n"
      "    calibration: {text: other}\n"
      "  - recipe: rtn-w4g128\n    name: rtn-self\n    params: {group_size: 32}\n"
      "    calibration: {text: 'self:4'}\n");
  const std::string out = f.dir + "/r.h5";
  auto refused = RunPerpcomp("sweep " + f.Args(sweep, out));
  CHECK(refused.exit_code == 1);
  CHECK_THAT(refused.err, Contains("texts.yaml:10") && Contains("calibration text 'other' is not given"));
  CHECK(!Exists(out));
  CHECK(!Exists(f.dir + "/r.work"));
  auto r = RunPerpcomp("sweep " + f.Args(sweep, out) + " --calib-text other=" + Q(other));
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  pc::store::File res = pc::store::File::OpenRead(out);
  auto source = [&](const std::string& run) {
    const auto record = nlohmann::json::parse(res.root().OpenGroup("runs/" + run).GetAttr<std::string>("compression"));
    return record.at("calibration").at("source").get<std::string>();
  };
  CHECK(source("rtn-default") == f.text);
  CHECK(source("rtn-other") == other);
  CHECK(source("rtn-self") == "self:4");
  const auto conventions = nlohmann::json::parse(res.root().GetAttr<std::string>("conventions"));
  CHECK(conventions.at("calib").at("texts").at("other").at("sha256") == pc::Sha256File(other));
  // A resume must bind the same texts: another file under the name is another sweep.
  auto rebound = RunPerpcomp("sweep " + f.Args(sweep, out) + " --calib-text other=" + Q(f.text));
  CHECK(rebound.exit_code == 1);
  CHECK_THAT(rebound.err, Contains("calib"));

  // --max-pairs scores the first N pairs of each file, for the reference and every run alike.
  const std::string out3 = f.dir + "/r3.h5";
  auto three = RunPerpcomp("sweep " + f.Args(sweep, out3) + " --calib-text other=" + Q(other) + " --max-pairs 3");
  INFO(three.out << three.err);
  REQUIRE(three.exit_code == 0);
  pc::store::File res3 = pc::store::File::OpenRead(out3);
  CHECK(res3.root().OpenGroup("runs/rtn-other/pairs").GetAttr<int64_t>("pairs") == 3);
  CHECK(res.root().OpenGroup("runs/rtn-other/pairs").GetAttr<int64_t>("pairs") > 3);
  CHECK(nlohmann::json::parse(res3.root().GetAttr<std::string>("conventions")).at("max_pairs") == 3);
  auto negative = RunPerpcomp("sweep " + f.Args(sweep, out3) + " --max-pairs -1");
  CHECK(negative.exit_code == 1);
  CHECK_THAT(negative.err, Contains("--max-pairs must not be negative"));
}
