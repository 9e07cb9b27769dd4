// lm-evaluation-harness results files.
#include <catch2/catch.hpp>

#include <fstream>

#include "metrics/lm_eval_import.h"
#include "tests/test_support.h"

using Catch::Matchers::Contains;

TEST_CASE("lm-eval results: new (metric,filter) and old key styles, errors name the file", "[metrics]") {
  std::string dir = pc::test::TempDir("lmeval");
  std::string path = dir + "/results.json";
  std::ofstream(path) << R"({
    "results": {
      "blimp_regular_plural_subject_verb_agreement_1": {"alias": " - blimp_regular", "acc,none": 0.812, "acc_stderr,none": 0.0123},
      "arc_easy": {"acc": 0.43, "acc_norm": 0.41, "acc_stderr": "N/A"}
    },
    "config": {"model": "hf", "model_args": "pretrained=/models/x,dtype=float32"}
  })";
  pc::LmEvalResults r = pc::ReadLmEvalResults(path);
  REQUIRE(r.scores.size() == 4);
  CHECK(r.scores[0].task == "arc_easy");  // tasks sorted
  CHECK(r.scores[0].metric == "acc");
  CHECK(r.scores[0].filter == "");
  CHECK(r.scores[1].metric == "acc_norm");
  CHECK(r.scores[2].task == "blimp_regular_plural_subject_verb_agreement_1");
  CHECK(r.scores[2].metric == "acc");
  CHECK(r.scores[2].filter == "none");
  CHECK(r.scores[2].value == 0.812);
  CHECK(r.scores[3].metric == "acc_stderr");
  CHECK(r.model_args == "pretrained=/models/x,dtype=float32");
  CHECK(r.sha256.size() == 64);

  std::string bad = dir + "/bad.json";
  std::ofstream(bad) << R"({"versions": {}})";
  CHECK_THROWS_WITH(pc::ReadLmEvalResults(bad), Contains("'" + bad + "' has no \"results\" object"));
  std::ofstream(bad) << R"({"results": {"t": 3}})";
  CHECK_THROWS_WITH(pc::ReadLmEvalResults(bad), Contains("results.t is number, expected an object of metrics"));
  std::ofstream(bad) << R"({"results": {"t": {"alias": "x"}}})";
  CHECK_THROWS_WITH(pc::ReadLmEvalResults(bad), Contains("holds no numeric scores"));
  std::ofstream(bad) << "{";
  CHECK_THROWS_WITH(pc::ReadLmEvalResults(bad), Contains(bad + ": invalid JSON"));
  CHECK_THROWS_WITH(pc::ReadLmEvalResults(dir + "/none.json"), Contains("none.json' does not exist"));
}

TEST_CASE("lm-eval results against the reference model's: the drop, by each metric's direction", "[metrics]") {
  std::string dir = pc::test::TempDir("lmeval_drop");
  std::ofstream(dir + "/ref.json") << R"({"results": {
      "blimp_local_x": {"alias": "x", "acc,none": 0.80, "acc_stderr,none": 0.04},
      "wikitext_local": {"word_perplexity,none": 100.0, "bits_per_byte,none": 1.5, "sample_len": 16},
      "only_ref": {"acc,none": 0.5}}})";
  std::ofstream(dir + "/cmp.json") << R"({"results": {
      "blimp_local_x": {"acc,none": 0.75, "acc_stderr,none": 0.05},
      "wikitext_local": {"word_perplexity,none": 110.0, "bits_per_byte,none": 1.25, "sample_len": 16},
      "only_model": {"acc,none": 0.9}}})";
  auto drops = pc::CompareLmEvalResults(pc::ReadLmEvalResults(dir + "/cmp.json"), pc::ReadLmEvalResults(dir + "/ref.json"));
  REQUIRE(drops.size() == 3);  // stderr, sample_len and unshared tasks left out
  CHECK(drops[0].task == "blimp_local_x");
  CHECK(drops[0].metric == "acc");
  CHECK(drops[0].filter == "none");
  CHECK_FALSE(drops[0].lower_is_better);
  CHECK(drops[0].drop == Approx(0.05));
  CHECK(drops[1].metric == "bits_per_byte");  // metrics sorted by name within a task (nlohmann's order)
  CHECK(drops[1].lower_is_better);
  CHECK(drops[1].drop == Approx(-0.25));  // better than the reference
  CHECK(drops[2].metric == "word_perplexity");
  CHECK(drops[2].lower_is_better);
  CHECK(drops[2].drop == Approx(10.0));
  std::ofstream(dir + "/other.json") << R"({"results": {"arc_easy": {"acc": 0.4}}})";
  CHECK_THROWS_WITH(pc::CompareLmEvalResults(pc::ReadLmEvalResults(dir + "/other.json"),
                                             pc::ReadLmEvalResults(dir + "/ref.json")),
                    Contains("shares no task/metric"));
}
