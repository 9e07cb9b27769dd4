// Crash safety and sharding of `perpcomp sweep` (docs/HDF5.md, docs/SWEEPS.md):
// the second run of a three-run sweep is killed (SIGKILL) during compress, during measure,
// with its run file half-written and with the results file half-rebuilt; a rerun completes,
// leaves the first run's file byte-identical and gives the same results as an uninterrupted
// sweep. Three shards merged give the unsharded results.
#include <catch2/catch.hpp>

#include <filesystem>

#include "core/sha256.h"
#include "store/file.h"
#include "tests/sweep/sweep_test_util.h"

using Catch::Matchers::Contains;
using pc::test::RunPerpcomp;

namespace {

namespace stdfs = std::filesystem;

std::string Q(const std::string& s) { return "'" + s + "'"; }

bool AnyEntry(const std::string& dir, const std::string& prefix) {
  std::error_code ec;
  for (const auto& e : stdfs::directory_iterator(dir, ec)) {
    if (e.path().filename().string().rfind(prefix, 0) == 0) return true;
  }
  return false;
}

struct Scenario {
  const char* name;
  const char* hook;  // PERPCOMP_TEST_CRASH, or "" for a kill from outside (during compress)
  const char* resumed;  // the rerun's summary
};

}  // namespace

TEST_CASE("sweep: SIGKILL at any point of the second run, then a rerun completes it", "[sweep][slow]") {
  const pc::test::SweepFixture f = pc::test::MakeSweepFixture("crash");
  const std::string sweep = pc::test::ThreeRunSweep(f.dir);
  const std::string clean = f.dir + "/clean.h5";
  {
    auto r = RunPerpcomp("sweep " + f.Args(sweep, clean));
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
  }
  const std::string bin = pc::test::PerpcompBin();
  const Scenario scenarios[] = {
      {"compress", "", "3 of 3 runs complete (2 now, 1 earlier)"},
      {"measure", "awq-w4g32:measure-block-0", "3 of 3 runs complete (2 now, 1 earlier)"},
      {"write-run", "awq-w4g32:write-run", "3 of 3 runs complete (2 now, 1 earlier)"},
      {"write-results", "awq-w4g32:write-results", "3 of 3 runs complete (1 now, 2 earlier)"},
  };
  for (const Scenario& s : scenarios) {
    SECTION(s.name) {
      const std::string out = f.dir + "/" + s.name + ".h5";
      const std::string work = f.dir + "/" + s.name + ".work";
      const std::string first = work + "/runs/0-rtn-w4g32.h5";
      const std::string second = work + "/runs/1-awq-w4g32.h5";
      const std::string command = Q(bin) + " sweep " + f.Args(sweep, out);
      if (std::string(s.hook).empty()) {
        // From outside, while the second run's checkpoint is being written.
        REQUIRE(pc::test::KillWhen(command, [&] { return AnyEntry(work + "/models", "awq-w4g32.tmp-"); }));
        CHECK(AnyEntry(work + "/models", "awq-w4g32.tmp-"));
      } else {
        auto killed = pc::test::Run("PERPCOMP_TEST_CRASH=" + std::string(s.hook) + " " + command);
        INFO(killed.err);
        REQUIRE(killed.exit_code == 128 + 9);
      }
      // What the kill left: the first run complete, the second not.
      REQUIRE(stdfs::exists(first));
      const std::string first_sha = pc::Sha256File(first);
      if (std::string(s.name) == "measure") {
        CHECK(stdfs::is_directory(work + "/models/awq-w4g32"));  // compressed, not yet measured
        CHECK(!stdfs::exists(second));
      }
      if (std::string(s.name) == "write-run") {
        CHECK(AnyEntry(work + "/runs", "1-awq-w4g32.h5.tmp-"));
        CHECK(!stdfs::exists(second));
      }
      if (std::string(s.name) == "write-results") {
        CHECK(stdfs::exists(second));
        CHECK(AnyEntry(f.dir, std::string(s.name) + ".h5.tmp-"));
      }
      if (std::string(s.name) != "write-results") {
        // The results file holds the first run: consistent up to the last finished run.
        CHECK(pc::test::ResultRuns(out) == std::vector<std::string>{"rtn-w4g32"});
      }

      auto rerun = RunPerpcomp("sweep " + f.Args(sweep, out));
      INFO(rerun.out << rerun.err);
      REQUIRE(rerun.exit_code == 0);
      CHECK_THAT(rerun.out, Contains(s.resumed));
      CHECK(pc::Sha256File(first) == first_sha);
      CHECK(pc::test::Temporaries(work).empty());
      CHECK(!AnyEntry(f.dir, std::string(s.name) + ".h5.tmp-"));
      pc::test::CheckSameResults(clean, out);
    }
  }
}

TEST_CASE("sweep: three shards merged equal the unsharded sweep", "[sweep][slow]") {
  const pc::test::SweepFixture f = pc::test::MakeSweepFixture("shards");
  const std::string sweep = pc::test::ThreeRunSweep(f.dir);
  const std::string whole = f.dir + "/whole.h5";
  auto r = RunPerpcomp("sweep " + f.Args(sweep, whole));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);

  std::vector<std::string> shards;
  for (int k = 0; k < 3; ++k) {
    const std::string out = f.dir + "/shard" + std::to_string(k) + ".h5";
    auto s = RunPerpcomp("sweep " + f.Args(sweep, out) + " --shard " + std::to_string(k) + "/3" +
                         (k == 1 ? " --keep-models" : ""));
    INFO(s.err);
    REQUIRE(s.exit_code == 0);
    CHECK_THAT(s.out, Contains("1 of 1 runs complete"));
    pc::store::File file = pc::store::File::OpenRead(out, pc::store::kind::kSweepResults);
    CHECK(file.root().GetAttr<std::string>("shard") == std::to_string(k) + "/3");
    CHECK(file.root().GetAttr<int64_t>("runs_total") == 3);
    CHECK(file.root().GetAttr<int64_t>("runs_complete") == 1);
    shards.push_back(out);
  }
  CHECK(stdfs::exists(f.dir + "/shard1.work/models/awq-w4g32/model.safetensors"));  // --keep-models

  // In any order; the runs come out in the sweep's order.
  const std::string merged = f.dir + "/merged.h5";
  auto m = RunPerpcomp("merge " + Q(shards[2]) + " " + Q(shards[0]) + " " + Q(shards[1]) + " --out " + Q(merged));
  INFO(m.err);
  REQUIRE(m.exit_code == 0);
  CHECK_THAT(m.out, Contains("merged 3 runs from 3 files"));
  pc::test::CheckSameResults(whole, merged);

  // Two of three shards: the shard attribute says which; an identical run twice is kept once.
  const std::string part = f.dir + "/part.h5";
  auto p = RunPerpcomp("merge " + Q(shards[0]) + " " + Q(shards[2]) + " " + Q(shards[0]) + " --out " + Q(part));
  INFO(p.err);
  REQUIRE(p.exit_code == 0);
  CHECK_THAT(p.out, Contains("merged 2 runs") && Contains("1 identical duplicates kept once") &&
                        Contains("shards 0/3,2/3"));
  CHECK(pc::test::ResultRuns(part) == std::vector<std::string>{"rtn-w4g32", "wanda-50"});

  // A sweep of another model cannot be merged with these: the first differing convention is named.
  pc::test::SweepFixture other = f;
  other.model = pc::test::TrainTinyModel(pc::test::TempDir("sweep-other-model"));
  const std::string one = pc::test::WriteTextFile(f.dir, "one.yaml", "name: three\nruns:\n  - recipe: wanda-50\n");
  const std::string other_out = f.dir + "/other-model.h5";
  auto o = RunPerpcomp("sweep " + other.Args(one, other_out));
  INFO(o.err);
  REQUIRE(o.exit_code == 0);
  auto refused = RunPerpcomp("merge " + Q(shards[0]) + " " + Q(other_out) + " --out " + Q(f.dir + "/mixed.h5"));
  CHECK(refused.exit_code == 1);
  CHECK_THAT(refused.err, Contains("cannot merge '" + other_out + "' with '" + shards[0] + "'") &&
                              Contains("different conventions ('model' is") && Contains(other.model));
  CHECK(!stdfs::exists(f.dir + "/mixed.h5"));

  // The merged file is refused as --out without --overwrite, and replaced with it.
  auto again = RunPerpcomp("merge " + Q(shards[0]) + " --out " + Q(merged));
  CHECK(again.exit_code == 1);
  CHECK_THAT(again.err, Contains("--overwrite"));
  CHECK(RunPerpcomp("merge " + Q(shards[0]) + " --out " + Q(merged) + " --overwrite").exit_code == 0);
  CHECK(pc::test::ResultRuns(merged).size() == 1);
}

TEST_CASE("sweep: a lost work folder is restored from the results file, a changed recipe is redone", "[sweep][slow]") {
  const pc::test::SweepFixture f = pc::test::MakeSweepFixture("restore");
  const std::string sweep = pc::test::ThreeRunSweep(f.dir);
  const std::string clean = f.dir + "/clean.h5";
  {
    auto r = RunPerpcomp("sweep " + f.Args(sweep, clean));
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
  }

  // Only the results file survived (a new machine): its default work folder does not exist.
  const std::string moved = f.dir + "/moved.h5";
  stdfs::copy_file(clean, moved);
  REQUIRE(!stdfs::exists(f.dir + "/moved.work"));
  auto r = RunPerpcomp("sweep " + f.Args(sweep, moved));
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("3 finished run(s) restored from " + moved) &&
                        Contains("3 of 3 runs complete (0 now, 3 earlier)"));
  CHECK(stdfs::exists(f.dir + "/moved.work/reference.h5"));
  for (const char* run : {"0-rtn-w4g32.h5", "1-awq-w4g32.h5", "2-wanda-50.h5"}) {
    CHECK(stdfs::exists(f.dir + "/moved.work/runs/" + std::string(run)));
  }
  CHECK(pc::test::Temporaries(f.dir + "/moved.work").empty());
  pc::test::CheckSameResults(clean, moved);

  // The sweep file changed one recipe since: the other two are restored, that one is run again.
  const std::string edited = pc::test::WriteTextFile(
      f.dir, "edited.yaml",
      "name: three\nruns:\n  - recipe: rtn-w4g128\n    name: rtn-w4g32\n    params: {group_size: 32}\n"
      "  - recipe: awq-w4g128\n    name: awq-w4g32\n    params: {group_size: 32, n_grid: 10}\n"
      "  - recipe: wanda-50\n    params: {sparsity: 0.4}\n");
  const std::string changed = f.dir + "/changed.h5";
  stdfs::copy_file(clean, changed);
  auto e = RunPerpcomp("sweep " + f.Args(edited, changed));
  INFO(e.out << e.err);
  REQUIRE(e.exit_code == 0);
  CHECK_THAT(e.out, Contains("2 finished run(s) restored") && Contains("3 of 3 runs complete (1 now, 2 earlier)"));
  CHECK(pc::test::ResultRuns(changed) == std::vector<std::string>{"rtn-w4g32", "awq-w4g32", "wanda-50"});
  pc::store::File file = pc::store::File::OpenRead(changed, pc::store::kind::kSweepResults);
  CHECK_THAT(file.root().OpenGroup("runs").OpenGroup("wanda-50").GetAttr<std::string>("recipe_yaml"),
             Contains("0.4"));
}
