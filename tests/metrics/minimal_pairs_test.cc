// Minimal pairs: reading (errors name the line), scoring (batched = one at a time = direct
// forward), aggregation, the blimp-sva preset.
#include <catch2/catch.hpp>

#include <ATen/ATen.h>

#include <fstream>

#include "calibration/windows.h"
#include "core/fs.h"
#include "metrics/minimal_pairs.h"
#include "model/tokenizer/tokenizer.h"
#include "tests/metrics/metrics_test_util.h"
#include "tests/test_support.h"

using Catch::Matchers::Contains;

namespace {

std::string WriteFile(const std::string& dir, const std::string& name, const std::string& text) {
  std::string p = dir + "/" + name;
  std::ofstream(p) << text;
  return p;
}

// log p(sentence) computed directly: one forward of [start] + tokens, log_softmax, gather.
double DirectLogProb(pc::Model& m, const pc::Tokenizer& tok, const std::string& s) {
  std::vector<int64_t> ids = {pc::ScoringStartId(tok)};
  for (int32_t id : tok.Encode(s)) ids.push_back(id);
  at::Tensor t = at::tensor(ids, at::kLong).view({1, -1});
  at::Tensor lp = at::log_softmax(m.Forward(t).to(at::kDouble), -1);
  double sum = 0;
  for (size_t i = 1; i < ids.size(); ++i) sum += lp[0][i - 1][ids[i]].item<double>();
  return sum;
}

const char* kPairs =
    R"({"sentence_good": "Once upon a time, there was a little girl.", "sentence_bad": "girl little a was there time, a upon Once.", "linguistics_term": "word_order", "UID": "order", "pairID": "0"})"
    "\n"
    R"({"sentence_good": "She was very happy.", "sentence_bad": "She were very happy.", "linguistics_term": "subject_verb_agreement", "UID": "sva", "pairID": "1"})"
    "\n\n"
    R"({"sentence_good": "The dog ran.", "sentence_bad": "The dog ran.", "linguistics_term": "subject_verb_agreement", "pairID": 2})"
    "\n";

}  // namespace

TEST_CASE("minimal-pair files: fields, defaults and errors naming the line", "[metrics]") {
  std::string dir = pc::test::TempDir("pairs");
  auto pairs = pc::ReadMinimalPairs(WriteFile(dir, "mine.jsonl", kPairs));
  REQUIRE(pairs.size() == 3);
  CHECK(pairs[0].file == "mine");
  CHECK(pairs[0].term == "word_order");
  CHECK(pairs[1].uid == "sva");
  CHECK(pairs[2].uid == "mine");  // UID absent: the file stem
  CHECK(pairs[2].pair_id == "2");
  CHECK(pairs[2].line == 4);      // blank line 3 skipped

  std::string missing = WriteFile(dir, "missing.jsonl",
                                  "{\"sentence_good\": \"a\", \"sentence_bad\": \"b\"}\n"
                                  "{\"sentence_good\": \"a\", \"sentence_bad\": \"b\"}\n"
                                  "{\"sentence_good\": \"a\"}\n");
  CHECK_THROWS_WITH(pc::ReadMinimalPairs(missing), Contains(missing + " line 3: missing key 'sentence_bad'"));
  std::string wrong = WriteFile(dir, "wrong.jsonl", "{\"sentence_good\": 1, \"sentence_bad\": \"b\"}\n");
  CHECK_THROWS_WITH(pc::ReadMinimalPairs(wrong),
                    Contains(wrong + " line 1: 'sentence_good' is number, expected a string"));
  std::string broken = WriteFile(dir, "broken.jsonl", "{\"sentence_good\": \"a\", \"sentence_bad\": \"b\"}\n{oops\n");
  CHECK_THROWS_WITH(pc::ReadMinimalPairs(broken), Contains(broken + " line 2: invalid JSON"));
  std::string array = WriteFile(dir, "array.jsonl", "[1, 2]\n");
  CHECK_THROWS_WITH(pc::ReadMinimalPairs(array), Contains(array + " line 1: expected a JSON object, got array"));
  std::string empty = WriteFile(dir, "empty.jsonl", "\n\n");
  CHECK_THROWS_WITH(pc::ReadMinimalPairs(empty), Contains("holds no minimal pairs"));
  CHECK_THROWS_WITH(pc::ReadMinimalPairs(dir + "/none.jsonl"), Contains("none.jsonl' does not exist"));
}

TEST_CASE("minimal-pair sources: file, folder, blimp-sva, and clear errors", "[metrics]") {
  std::string dir = pc::test::TempDir("pairsrc");
  WriteFile(dir, "b.jsonl", kPairs);
  WriteFile(dir, "a.jsonl", kPairs);
  WriteFile(dir, "notes.txt", "x");
  auto files = pc::ResolvePairFiles(dir, "/nonexistent");
  REQUIRE(files.size() == 2);
  CHECK(pc::fs::Basename(files[0]) == "a.jsonl");
  CHECK(pc::ResolvePairFiles(dir + "/b.jsonl", "").size() == 1);
  CHECK_THROWS_WITH(pc::ResolvePairFiles("blimp-sva", "/nonexistent/data"),
                    Contains("--pairs blimp-sva: the BLiMP data is not at '/nonexistent/data/tasks/blimp/data'") &&
                        Contains("PERPCOMP_SHARED"));
  CHECK_THROWS_WITH(pc::ResolvePairFiles(dir + "/nope", ""), Contains("does not exist"));
  std::string emptydir = pc::test::TempDir("emptypairs");
  CHECK_THROWS_WITH(pc::ResolvePairFiles(emptydir, ""), Contains("holds no .jsonl files"));
  if (!pc::test::SharedData().empty()) {
    auto sva = pc::ResolvePairFiles("blimp-sva", pc::test::SharedData());
    REQUIRE(sva.size() == 6);
    CHECK(pc::fs::Basename(sva[0]) == "distractor_agreement_relational_noun.jsonl");
  }
}

TEST_CASE("minimal-pair scoring: known answers, ties wrong and counted, batching exact", "[metrics][shared]") {
  PC_REQUIRE_SHARED();
  std::string dir = pc::test::Stories260KDir();
  auto model = pc::Model::Load(dir);
  auto tok = pc::LoadTokenizer(dir);
  std::string pdir = pc::test::TempDir("pairs");
  auto pairs = pc::ReadMinimalPairs(WriteFile(pdir, "mine.jsonl", kPairs));
  auto more = pc::ReadMinimalPairs(WriteFile(
      pdir, "more.jsonl",
      R"({"sentence_good": "The cat sat on the bed.", "sentence_bad": "bed the on sat cat The.", "linguistics_term": "word_order"})"
      "\n"));
  pairs.insert(pairs.end(), more.begin(), more.end());
  auto scores = pc::ScoreMinimalPairs(*model, *tok, pairs);
  // Against a direct one-sentence forward.
  for (size_t i = 0; i < pairs.size(); ++i) {
    INFO("pair " << i);
    CHECK(scores[i].logp_good == Approx(DirectLogProb(*model, *tok, pairs[i].good)).epsilon(1e-5));
    CHECK(scores[i].logp_bad == Approx(DirectLogProb(*model, *tok, pairs[i].bad)).epsilon(1e-5));
    CHECK(scores[i].tokens_good == static_cast<int64_t>(tok->Encode(pairs[i].good).size()));
  }
  CHECK(scores[0].correct());  // scrambled word order loses
  CHECK(scores[3].correct());
  CHECK(scores[2].tie());      // identical sentences tie exactly
  CHECK_FALSE(scores[2].correct());
  // One sentence per forward gives the same sums as the batched default.
  pc::PairScoringOptions one;
  one.max_batch_tokens = 1;
  auto single = pc::ScoreMinimalPairs(*model, *tok, pairs, one);
  for (size_t i = 0; i < pairs.size(); ++i) {
    CHECK(single[i].logp_good == Approx(scores[i].logp_good).epsilon(1e-5));
    CHECK(single[i].logp_bad == Approx(scores[i].logp_bad).epsilon(1e-5));
  }
  pc::PairAccuracy acc = pc::AggregatePairs(pairs, scores);
  REQUIRE(acc.by_file.size() == 2);
  CHECK(acc.by_file[0].group == "mine");
  CHECK(acc.by_file[0].pairs == 3);
  CHECK(acc.by_file[0].ties == 1);
  CHECK(acc.by_file[1].group == "more");
  CHECK(acc.by_file[1].correct == 1);
  REQUIRE(acc.by_term.size() == 2);
  CHECK(acc.by_term[0].group == "subject_verb_agreement");
  CHECK(acc.by_term[0].ties == 1);
  CHECK(acc.by_term[1].group == "word_order");
  CHECK(acc.by_term[1].accuracy == 1.0);
  CHECK(acc.overall.pairs == 4);
  CHECK(acc.overall.correct == 2 + static_cast<int64_t>(scores[1].correct()));
}

TEST_CASE("BLiMP subject-verb agreement: 6000 pairs on stories260K", "[metrics][shared][slow]") {
  // Its speed is measured by bench/metrics/pairs_bench (no timed assertion here, docs/RELIABILITY.md).
  PC_REQUIRE_SHARED();
  std::string dir = pc::test::Stories260KDir();
  auto model = pc::Model::Load(dir);
  auto tok = pc::LoadTokenizer(dir);
  std::vector<pc::MinimalPair> pairs;
  for (const auto& f : pc::ResolvePairFiles("blimp-sva", pc::test::SharedData())) {
    auto p = pc::ReadMinimalPairs(f);
    pairs.insert(pairs.end(), p.begin(), p.end());
  }
  REQUIRE(pairs.size() == 6000);
  auto scores = pc::ScoreMinimalPairs(*model, *tok, pairs);
  pc::PairAccuracy acc = pc::AggregatePairs(pairs, scores);
  REQUIRE(acc.by_file.size() == 6);
  for (const auto& r : acc.by_file) {
    WARN(r.group << ": " << r.accuracy << " (" << r.ties << " ties)");
    CHECK(r.pairs == 1000);
  }
}
