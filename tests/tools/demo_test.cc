// `perpcomp demo` end to end (pipeline/demo.h), shortened: 20 training steps per model and a sweep
// of four runs instead of recipes/sweeps/demo.yaml's sixteen; no shared data needed.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "core/json_util.h"
#include "tests/test_support.h"

using Catch::Matchers::Contains;
using pc::test::RunPerpcomp;

namespace {

constexpr const char* kSweep = R"(name: demo-test
description: four runs for the demo's end-to-end test
grids:
  - recipe: rtn-w4g128
    name: "rtn-w{bits}g32"
    params: {bits: [3, 4, 8], group_size: 32}
    calibration: {samples: 8}
runs:
  - recipe: magnitude-50
)";

}  // namespace

TEST_CASE("demo: corpus, two trained models, a sweep and its report, the models then cached", "[tools][slow]") {
  const std::string dir = pc::test::TempDir("demo");
  const std::string sweep = dir + "/sweep.yaml";
  std::ofstream(sweep) << kSweep;
  const std::string common = " --steps 20 --threads 2 --cache '" + dir + "/cache' --sweep '" + sweep + "'";
  auto r = RunPerpcomp("demo --out '" + dir + "/out'" + common);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("perpcomp demo: done in"));
  CHECK_THAT(r.out, Contains("(4 runs)"));

  nlohmann::json s = pc::LoadJsonFile(dir + "/out/perpcomp-demo.json");
  for (const char* label : {"layernorm", "rmsnorm"}) {
    const auto& m = s["models"][label];
    INFO(label);
    CHECK(m["parameters"].get<int64_t>() > 500000);
    // 20 steps: far from the trained demo models (ppl about 8), far below the unigram's (about 179).
    CHECK(std::isfinite(m["valid_ppl"].get<double>()));
    CHECK(m["valid_ppl"].get<double>() < m["unigram_ppl"].get<double>());
    CHECK(m["pairs"].size() == 3);
  }
  CHECK(s["sweep"]["runs"].get<int>() == 4);
  CHECK(pc::fs::Exists(dir + "/out/sweep/results.h5"));
  CHECK(pc::fs::Exists(dir + "/out/report/report.html"));
  CHECK(pc::fs::Exists(dir + "/out/corpus/pairs/agreement_1_attractor.jsonl"));

  // Again into the same folder (a previous demo output is replaced): both models come from the cache.
  auto again = RunPerpcomp("demo --out '" + dir + "/out' --no-sweep" + common);
  INFO(again.err);
  REQUIRE(again.exit_code == 0);
  CHECK_THAT(again.err, Contains("layernorm model: cached at"));
  CHECK_THAT(again.err, Contains("rmsnorm model: cached at"));
  CHECK(pc::LoadJsonFile(dir + "/out/perpcomp-demo.json")["sweep"].is_null());
}

TEST_CASE("demo: refuses a folder that is not its own, and bad options, before any work", "[tools]") {
  const std::string dir = pc::test::TempDir("demo-errors");
  std::ofstream(dir + "/notes.txt") << "a user's file\n";
  auto taken = RunPerpcomp("demo --out '" + dir + "' --steps 20 --cache '" + dir + "/cache'");
  CHECK(taken.exit_code != 0);
  CHECK_THAT(taken.err, Contains("--out"));
  CHECK(pc::fs::Exists(dir + "/notes.txt"));
  CHECK_FALSE(pc::fs::Exists(dir + "/cache"));

  auto steps = RunPerpcomp("demo --out '" + dir + "/new' --steps 0");
  CHECK(steps.exit_code != 0);
  CHECK_THAT(steps.err, Contains("--steps 0"));
  CHECK_FALSE(pc::fs::Exists(dir + "/new"));

  auto sweep = RunPerpcomp("demo --out '" + dir + "/new' --steps 20 --cache '" + dir + "/cache' --sweep /nonexistent.yaml");
  CHECK(sweep.exit_code != 0);
  CHECK_THAT(sweep.err, Contains("/nonexistent.yaml"));
  CHECK_FALSE(pc::fs::Exists(dir + "/new"));
}
