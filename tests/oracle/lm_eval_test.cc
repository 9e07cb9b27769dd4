// lm-evaluation-harness consumes perpcomp's outputs: lm-eval's Hugging Face backend
// (tools/lm_eval_local.py, the stock BLiMP prompt and metric over local files) on an original and
// a compressed folder; perpcomp's minimal-pair accuracy on the same pairs, scored as lm-eval does
// (--pair-prefix " ": its target_delimiter), must equal lm-eval's exactly; perpcomp imports both
// results files and reports the compressed model's drop; the same for WikiText word perplexity.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "tests/test_support.h"

namespace {

// The first n lines of a BLiMP file, written to dir under the same name.
std::string HeadLines(const std::string& src, const std::string& dir, int n) {
  std::ifstream in(src);
  std::string out = dir + "/" + pc::fs::Basename(src), line;
  std::ofstream o(out);
  for (int i = 0; i < n && std::getline(in, line); ++i) o << line << "\n";
  return out;
}

// lm_eval_local.py on model with the given task options; its results file, parsed.
nlohmann::json LmEval(const std::string& model, const std::string& tasks, const std::string& out) {
  pc::test::RunResult r = pc::test::RunRefPython(
      "tools/lm_eval_local.py", "--model '" + model + "' --batch-size 32 --out '" + out + "' " + tasks);
  INFO(r.err.substr(r.err.size() > 4000 ? r.err.size() - 4000 : 0));
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(pc::fs::ReadFile(out));
}

// tiny-random-gpt2 pruned by recipes/magnitude-50.yaml into dir/magnitude-50.
std::string CompressedModel(const std::string& original, const std::string& dir) {
  const std::string compressed = dir + "/magnitude-50";
  pc::test::RunResult c = pc::test::RunPerpcomp(
      "compress --threads 1 --model '" + original + "' --recipe '" + pc::test::SourceDir() +
      "/recipes/magnitude-50.yaml' --calib '" + pc::test::SharedPath("text/c4-sample/c4_sample.jsonl") +
      "' --calib-samples 4 --calib-seq-len 32 --out '" + compressed + "'");
  INFO(c.err);
  REQUIRE(c.exit_code == 0);
  return compressed;
}

nlohmann::json PerpcompEval(const std::string& args) {
  pc::test::RunResult r = pc::test::RunPerpcomp("eval --threads 1 --json " + args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out);
}

// Per-file accuracy: perpcomp's correct count equals lm-eval's acc x pairs.
void CheckSameAccuracy(const nlohmann::json& ours, const nlohmann::json& lm, const std::vector<std::string>& stems,
                       int pairs) {
  for (const auto& stem : stems) {
    const double acc = lm["results"]["blimp_local_" + stem]["acc,none"].get<double>();
    const auto& row = ours["pairs"]["files"][stem];
    INFO(stem << ": lm-eval acc " << acc << ", perpcomp " << row.dump());
    CHECK(row["pairs"].get<int>() == pairs);
    CHECK(row["correct"].get<int>() == static_cast<int>(std::lround(acc * pairs)));
    CHECK(row["accuracy"].get<double>() == Approx(acc).margin(1e-12));
  }
}

}  // namespace

TEST_CASE("lm-eval (HF backend) on original and compressed folders: BLiMP accuracy equals perpcomp's and the drop is reported",
          "[oracle][shared][slow]") {
  PC_REQUIRE_SHARED();
  PC_REQUIRE_REFENV();
  constexpr int kPairs = 100;  // lm-eval's --limit 100, as files of the first 100 pairs
  const std::vector<std::string> stems = {"regular_plural_subject_verb_agreement_1",
                                          "distractor_agreement_relational_noun"};
  const std::string dir = pc::test::TempDir("lm_eval_oracle");
  std::string files;
  for (const auto& s : stems) {
    files += " '" + HeadLines(pc::test::SharedPath("tasks/blimp/data/" + s + ".jsonl"), dir, kPairs) + "'";
  }
  const std::string original = pc::test::SharedPath("models/tiny-random-gpt2");
  const std::string compressed = CompressedModel(original, dir);

  const nlohmann::json lm_ref = LmEval(original, "--no-wikitext --blimp " + files, dir + "/original.json");
  const nlohmann::json lm_cmp = LmEval(compressed, "--no-wikitext --blimp " + files, dir + "/compressed.json");
  std::string pairs;
  for (const auto& s : stems) pairs += " --pairs '" + dir + "/" + s + ".jsonl'";

  const nlohmann::json ours_ref = PerpcompEval("--model '" + original + "' --pair-prefix ' '" + pairs);
  CheckSameAccuracy(ours_ref, lm_ref, stems, kPairs);
  const nlohmann::json ours_cmp =
      PerpcompEval("--model '" + compressed + "' --pair-prefix ' '" + pairs + " --import-lm-eval '" + dir +
                   "/compressed.json' --lm-eval-reference '" + dir + "/original.json'");
  CheckSameAccuracy(ours_cmp, lm_cmp, stems, kPairs);

  // The drop: reference minus compressed accuracy, for every task, from the two imported files.
  for (const auto& s : stems) {
    const std::string task = "blimp_local_" + s;
    const auto& d = ours_cmp["lm_eval_drop"][task]["acc,none"];
    const double ref = lm_ref["results"][task]["acc,none"].get<double>();
    const double cmp = lm_cmp["results"][task]["acc,none"].get<double>();
    INFO(task << ": " << d.dump());
    CHECK(d["reference"].get<double>() == ref);
    CHECK(d["value"].get<double>() == cmp);
    CHECK(d["drop"].get<double>() == Approx(ref - cmp).margin(1e-12));
    CHECK(ours_cmp["lm_eval"][task]["acc,none"].get<double>() == cmp);
  }
}

// WikiText word perplexity (lm-eval's wikitext task over the local file, first 2 pages, rolling
// windows of 256 tokens) of the original and the compressed folder; perpcomp imports both files
// and reports the compressed model's rise in every perplexity and in bits per byte.
TEST_CASE("lm-eval (HF backend) WikiText word perplexity of original and compressed folders: perpcomp reports the rise",
          "[oracle][shared][slow]") {
  PC_REQUIRE_SHARED();
  PC_REQUIRE_REFENV();
  const std::string dir = pc::test::TempDir("lm_eval_wikitext");
  const std::string original = pc::test::SharedPath("models/tiny-random-gpt2");
  const std::string compressed = CompressedModel(original, dir);
  const std::string tasks = "--no-blimp --limit 2 --max-length 256";
  const nlohmann::json lm_ref = LmEval(original, tasks, dir + "/original.json");
  const nlohmann::json lm_cmp = LmEval(compressed, tasks, dir + "/compressed.json");
  const auto& ref = lm_ref["results"]["wikitext_local"];
  const auto& cmp = lm_cmp["results"]["wikitext_local"];
  INFO(ref.dump() << "\n" << cmp.dump());
  REQUIRE(lm_ref["n-samples"]["wikitext_local"]["effective"].get<int>() == 2);
  REQUIRE(lm_ref["config"]["model_args"].get<std::string>().find("max_length=256") != std::string::npos);
  for (const char* m : {"word_perplexity,none", "byte_perplexity,none", "bits_per_byte,none"}) {
    REQUIRE(ref[m].is_number());
    CHECK(std::isfinite(ref[m].get<double>()));
    CHECK(cmp[m].get<double>() != ref[m].get<double>());  // pruning half the weights changes the model
  }
  // bits per byte is log2 of the byte perplexity (lm-eval's definitions, docs/METRICS.md)
  CHECK(ref["bits_per_byte,none"].get<double>() ==
        Approx(std::log2(ref["byte_perplexity,none"].get<double>())).epsilon(1e-9));

  const nlohmann::json ours =
      PerpcompEval("--model '" + compressed + "' --text '" + pc::test::SharedPath("text/wikitext-2/wiki.test.raw.txt") +
                   "' --seq-len 64 --max-windows 1 --import-lm-eval '" + dir + "/compressed.json' --lm-eval-reference '" +
                   dir + "/original.json'");
  const auto& drops = ours["lm_eval_drop"]["wikitext_local"];
  INFO(drops.dump());
  CHECK(drops.size() == 3);  // the three scores; sample_len is not one
  for (const char* m : {"word_perplexity,none", "byte_perplexity,none", "bits_per_byte,none"}) {
    CHECK(drops[m]["lower_is_better"].get<bool>());
    CHECK(drops[m]["drop"].get<double>() == Approx(cmp[m].get<double>() - ref[m].get<double>()).margin(1e-12));
  }
}
