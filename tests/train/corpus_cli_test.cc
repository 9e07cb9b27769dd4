// `perpcomp corpus` end to end: options and their defaults, the written folder, determinism
// across runs, and the error exits (needs the full build: the perpcomp binary).
#include <catch2/catch.hpp>

#include "core/fs.h"
#include "core/json_util.h"
#include "core/sha256.h"
#include "tests/test_support.h"

using Catch::Matchers::Contains;
using pc::test::RunPerpcomp;

TEST_CASE("perpcomp corpus --help lists every option with its default", "[corpus][cli]") {
  auto r = RunPerpcomp("corpus --help");
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("--out"));
  CHECK_THAT(r.out, Contains("--sentences arg (=100000)"));
  CHECK_THAT(r.out, Contains("--valid-sentences arg (=0)"));
  CHECK_THAT(r.out, Contains("--seed arg (=0)"));
  CHECK_THAT(r.out, Contains("--pairs-per-condition arg (=500)"));
  CHECK_THAT(r.out, Contains("--depth-samples arg (=1000)"));
  CHECK_THAT(r.out, Contains("--overwrite"));
  CHECK_THAT(r.out, Contains("--print-grammar"));

  auto g = RunPerpcomp("corpus --print-grammar");
  REQUIRE(g.exit_code == 0);
  CHECK_THAT(g.out, Contains("| VP | vp_coordination |"));
  CHECK_THAT(g.out, Contains("mouse/mice"));
}

TEST_CASE("perpcomp corpus writes the folder, the same bytes for the same seed", "[corpus][cli]") {
  const std::string dir = pc::test::TempDir("corpus-cli");
  const std::string args = " --sentences 2000 --seed 3 --pairs-per-condition 20 --depth-samples 50 --quiet";
  auto r = RunPerpcomp("corpus --out '" + dir + "/a'" + args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  for (const char* f : {"train.txt", "valid.txt", "pairs/agreement_0_attractors.jsonl",
                        "pairs/agreement_1_attractor.jsonl", "pairs/agreement_2_attractors.jsonl", "depths.jsonl",
                        "corpus.json"}) {
    INFO(f);
    CHECK(pc::fs::Exists(dir + "/a/" + f));
  }
  const auto manifest = pc::LoadJsonFile(dir + "/a/corpus.json");
  CHECK(manifest["counts"]["train_sentences"] == 2000);
  CHECK(manifest["counts"]["valid_sentences"] == 200);
  CHECK(manifest["files"]["train.txt"]["sha256"] == pc::Sha256File(dir + "/a/train.txt"));

  REQUIRE(RunPerpcomp("corpus --out '" + dir + "/b'" + args).exit_code == 0);
  for (const char* f : {"train.txt", "valid.txt", "pairs/agreement_2_attractors.jsonl", "depths.jsonl", "corpus.json"}) {
    INFO(f);
    CHECK(pc::fs::ReadFile(dir + "/a/" + f) == pc::fs::ReadFile(dir + "/b/" + f));
  }
  REQUIRE(RunPerpcomp("corpus --out '" + dir + "/c' --sentences 2000 --seed 4 --pairs-per-condition 20 --quiet")
              .exit_code == 0);
  CHECK(pc::fs::ReadFile(dir + "/a/train.txt") != pc::fs::ReadFile(dir + "/c/train.txt"));

  // An existing folder needs --overwrite.
  auto again = RunPerpcomp("corpus --out '" + dir + "/a'" + args);
  CHECK(again.exit_code == 1);
  CHECK_THAT(again.err, Contains("already exists") && Contains("--overwrite"));
  CHECK(RunPerpcomp("corpus --out '" + dir + "/a' --overwrite" + args).exit_code == 0);
}

TEST_CASE("perpcomp corpus error exits", "[corpus][cli]") {
  const std::string dir = pc::test::TempDir("corpus-cli-err");
  auto zero = RunPerpcomp("corpus --out '" + dir + "/z' --sentences 0");
  CHECK(zero.exit_code == 1);
  CHECK_THAT(zero.err, Contains("--sentences must be between 1") && Contains("got 0"));
  CHECK(!pc::fs::Exists(dir + "/z"));

  auto missing = RunPerpcomp("corpus --sentences 10");
  CHECK(missing.exit_code == 1);
  CHECK_THAT(missing.err, Contains("--out is required"));

  auto bad_value = RunPerpcomp("corpus --out '" + dir + "/x' --sentences many");
  CHECK(bad_value.exit_code == 2);
  CHECK_THAT(bad_value.err, Contains("sentences"));

  pc::fs::WriteFileAtomic(dir + "/file", "x");
  auto below_file = RunPerpcomp("corpus --out '" + dir + "/file/c' --sentences 10 --pairs-per-condition 2");
  CHECK(below_file.exit_code == 1);
  CHECK_THAT(below_file.err, Contains("is not a folder"));
}
