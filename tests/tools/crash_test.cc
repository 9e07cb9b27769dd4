// Crash safety of `perpcomp compress` and `sweep` (docs/RELIABILITY.md,
// docs/RELIABILITY.md): SIGKILL at several points leaves an earlier output beside it
// byte-identical and nothing under the final name, and a rerun gives the weights of an
// uninterrupted run; a write that fails (file-size limit, as on a full disk) ends with a clear
// error, a non-zero status, the earlier outputs intact and no partial output.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <map>

#include "core/fs.h"
#include "core/sha256.h"
#include "tests/sweep/sweep_test_util.h"

using Catch::Matchers::Contains;
using pc::test::RunPerpcomp;

namespace {

namespace stdfs = std::filesystem;

std::string Q(const std::string& s) { return "'" + s + "'"; }

// sha256 of every file under `dir`, by relative path.
std::map<std::string, std::string> Digest(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : stdfs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) out[stdfs::relative(e.path(), dir).string()] = pc::Sha256File(e.path().string());
  }
  return out;
}

bool AnyEntry(const std::string& dir, const std::string& prefix) {
  for (const auto& e : stdfs::directory_iterator(dir)) {
    if (e.path().filename().string().rfind(prefix, 0) == 0) return true;
  }
  return false;
}


struct CompressFixture {
  pc::test::SweepFixture f;
  std::string args;  // everything but --out
};

CompressFixture MakeCompressFixture(const std::string& name) {
  CompressFixture c;
  c.f = pc::test::MakeSweepFixture(name);
  c.args = " --threads 1 --model " + Q(c.f.model) + " --calib " + Q(c.f.text) +
           " --calib-samples 8 --calib-seq-len 32 --recipe awq-w4g128";
  return c;
}

}  // namespace

TEST_CASE("compress: SIGKILL at any point leaves earlier outputs intact, and a rerun completes", "[tools][crash][slow]") {
  const CompressFixture c = MakeCompressFixture("crash-compress");
  const std::string& dir = c.f.dir;
  const std::string earlier = dir + "/earlier", clean = dir + "/clean";
  for (const std::string& out : {earlier, clean}) {
    auto r = RunPerpcomp("compress" + c.args + " --out " + Q(out));
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
  }
  const auto earlier_digest = Digest(earlier);
  const std::string clean_weights = pc::Sha256File(clean + "/model.safetensors");
  const std::string bin = pc::test::PerpcompBin();

  for (const std::string point : {"calibration", "block-0", "write-log", "commit", "outside"}) {
    SECTION(point) {
      const std::string out = dir + "/out-" + point;
      const std::string command = Q(bin) + " compress" + c.args + " --out " + Q(out);
      if (point == "outside") {
        // From outside, as soon as the staged folder appears.
        REQUIRE(pc::test::KillWhen(command, [&] { return AnyEntry(dir, "out-outside.tmp-"); }));
      } else {
        auto killed = pc::test::Run("PERPCOMP_TEST_CRASH=" + point + " " + command);
        INFO(killed.err);
        REQUIRE(killed.exit_code == 128 + 9);
        CHECK(AnyEntry(dir, "out-" + point + ".tmp-"));  // what a crash leaves: a temporary name
      }
      CHECK(!stdfs::exists(out));
      CHECK(Digest(earlier) == earlier_digest);
      // A rerun completes (the temporary folder of the killed run is no obstacle) and gives the
      // weights of an uninterrupted run.
      auto rerun = RunPerpcomp("compress" + c.args + " --out " + Q(out));
      INFO(rerun.err);
      REQUIRE(rerun.exit_code == 0);
      CHECK(pc::Sha256File(out + "/model.safetensors") == clean_weights);
      CHECK(stdfs::exists(out + "/compress.h5"));
      CHECK(Digest(earlier) == earlier_digest);
      CHECK(!AnyEntry(dir, "out-" + point + ".tmp-"));  // the rerun removed the killed run's temporary
    }
  }

  SECTION("overwrite") {
    // Killed while replacing an existing output with --overwrite: the old one stays whole.
    const std::string out = dir + "/replaced";
    stdfs::copy(earlier, out);
    const auto before = Digest(out);
    for (const char* point : {"block-0", "commit"}) {
      auto killed = pc::test::Run(std::string("PERPCOMP_TEST_CRASH=") + point + " " + Q(bin) + " compress" + c.args +
                                  " --out " + Q(out) + " --overwrite");
      REQUIRE(killed.exit_code == 128 + 9);
      CHECK(Digest(out) == before);
    }
    auto rerun = RunPerpcomp("compress" + c.args + " --out " + Q(out) + " --overwrite");
    INFO(rerun.err);
    REQUIRE(rerun.exit_code == 0);
    CHECK(pc::Sha256File(out + "/model.safetensors") == clean_weights);
    CHECK(Digest(earlier) == earlier_digest);
  }
}

TEST_CASE("compress and sweep: a failed write (file-size limit) is a clear error, earlier outputs intact",
          "[tools][crash]") {
  const CompressFixture c = MakeCompressFixture("disk-full");
  const std::string& dir = c.f.dir;
  const std::string earlier = dir + "/earlier";
  {
    auto r = RunPerpcomp("compress" + c.args + " --out " + Q(earlier));
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
  }
  const auto earlier_digest = Digest(earlier);
  const rlim_t limit = static_cast<rlim_t>(pc::fs::FileSize(earlier + "/model.safetensors") / 2);
  const std::string bin = pc::test::PerpcompBin();

  SECTION("compress") {
    for (const bool overwrite : {false, true}) {
      const std::string out = overwrite ? earlier : dir + "/out";
      auto r = pc::test::RunWithFileLimit(Q(bin) + " compress" + c.args + " --out " + Q(out) + (overwrite ? " --overwrite" : ""),
                                limit);
      INFO(r.err);
      CHECK(r.exit_code == 1);
      CHECK_THAT(r.err, Contains("perpcomp compress: error: cannot write") && Contains("model.safetensors") &&
                            Contains("File too large"));
      CHECK(!stdfs::exists(dir + "/out"));
      CHECK(Digest(earlier) == earlier_digest);
      CHECK(pc::test::Temporaries(dir).empty());  // the staged folder is removed on the error
    }
  }

  SECTION("sweep") {
    // An earlier sweep finished its first run; the rerun of the whole sweep cannot write.
    const std::string first = pc::test::WriteTextFile(
        dir, "first.yaml", "name: three\nruns:\n  - recipe: rtn-w4g128\n    name: rtn-w4g32\n    params: {group_size: 32}\n");
    const std::string results = dir + "/results.h5", work = dir + "/results.work";
    auto r = RunPerpcomp("sweep " + c.f.Args(first, results));
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const auto work_runs = Digest(work + "/runs");
    const std::string three = pc::test::ThreeRunSweep(dir);
    auto full = pc::test::RunWithFileLimit(Q(bin) + " sweep " + c.f.Args(three, results), limit);
    INFO(full.err);
    CHECK(full.exit_code == 1);
    CHECK_THAT(full.err, Contains("perpcomp sweep: error: ") && Contains("File too large"));
    CHECK_THAT(full.err, Contains("cannot write") || Contains("cannot create") || Contains("cannot close"));
    // The results file may have been rebuilt (complete, renamed into place) for the larger
    // sweep before the failure; it holds the finished run, and no half-written one.
    CHECK(pc::test::ResultRuns(results) == std::vector<std::string>{"rtn-w4g32"});
    CHECK(Digest(work + "/runs") == work_runs);
    CHECK(!stdfs::exists(work + "/models/awq-w4g32"));
    CHECK(pc::test::Temporaries(work + "/runs").empty());
    // Without the limit the sweep completes from where it was.
    auto rerun = RunPerpcomp("sweep " + c.f.Args(three, results));
    INFO(rerun.err);
    REQUIRE(rerun.exit_code == 0);
    CHECK_THAT(rerun.out, Contains("3 of 3 runs complete (2 now, 1 earlier)"));
  }
}
