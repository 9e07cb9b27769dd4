// perpcomp's tokenizers against Hugging Face tokenizers (tests/oracle/hf_tokenize.py in the
// reference environment): identical ids on WikiText-2 test (whole and line by line), the C4
// sample, every BLiMP sentence and a generated adversarial set, for every tokenizer perpcomp
// reads; Decode of those ids equal to Hugging Face's decode, so decode(encode(x)) == x wherever
// Hugging Face round-trips.
#include <catch2/catch.hpp>

#include <map>
#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "core/text.h"
#include "model/tokenizer/tokenizer.h"
#include "tests/test_support.h"
#include "tests/tokenizer/tok_test_util.h"

namespace {

struct Counts {
  int64_t texts = 0, tokens = 0, id_mismatches = 0, decode_mismatches = 0, roundtrips = 0;
};

// Runs hf_tokenize.py KIND PATH and compares `tok` on every text it wrote.
void CompareWithHf(const pc::Tokenizer& tok, const std::string& kind, const std::string& path) {
  std::string out = pc::test::TempDir("hf-tokenize") + "/hf.jsonl";
  pc::test::RunResult r = pc::test::RunRefPython(
      "tests/oracle/hf_tokenize.py", kind + " '" + path + "' '" + pc::test::SharedData() + "' '" + out + "'");
  INFO("hf_tokenize.py " << kind << " " << path << "\n" << r.err);
  REQUIRE(r.exit_code == 0);
  std::map<std::string, Counts> sets;
  int reported = 0;
  pc::ForEachJsonLine(pc::fs::ReadFile(out), out, [&](const nlohmann::json& j, const std::string&, int64_t line) {
    const std::string set = j["set"].get<std::string>(), text = j["text"].get<std::string>();
    const std::vector<int32_t> want = j["ids"].get<std::vector<int32_t>>();
    Counts& c = sets[set];
    ++c.texts;
    c.tokens += static_cast<int64_t>(want.size());
    std::vector<int32_t> got = tok.Encode(text);
    if (got != want) {
      ++c.id_mismatches;
      if (reported++ < 20) {
        FAIL_CHECK(set << " line " << line << " text '" << text << "'\n  Hugging Face" << pc::test::IdsString(want)
                       << "\n  perpcomp    " << pc::test::IdsString(got));
      }
    }
    const std::string decoded = tok.Decode(want);
    if (decoded != j["decoded"].get<std::string>()) {
      ++c.decode_mismatches;
      if (reported++ < 20) {
        FAIL_CHECK(set << " line " << line << ": decode differs for text '" << text << "'\n  Hugging Face '"
                       << j["decoded"].get<std::string>() << "'\n  perpcomp     '" << decoded << "'");
      }
    }
    if (j["roundtrip"].get<bool>()) {
      ++c.roundtrips;
      CHECK(tok.Decode(got) == text);
    }
  });
  int64_t texts = 0, tokens = 0;
  for (const auto& [set, c] : sets) {
    WARN(path << " " << set << ": " << c.texts << " texts, " << c.tokens << " tokens compared; " << c.id_mismatches
              << " id and " << c.decode_mismatches << " decode mismatches; " << c.roundtrips << " round trips");
    CHECK(c.id_mismatches == 0);
    CHECK(c.decode_mismatches == 0);
    texts += c.texts;
    tokens += c.tokens;
  }
  WARN(path << ": " << texts << " texts, " << tokens << " tokens compared in all");
  CHECK(sets.size() == 5);
}

}  // namespace

TEST_CASE("HF tokenizers oracle: GPT-NeoX-20B tokenizer.json", "[tokenizer][oracle][shared]") {
  PC_REQUIRE_SHARED();
  PC_REQUIRE_REFENV();
  std::string path = pc::test::SharedPath("tokenizers/gpt-neox-20b/tokenizer.json");
  CompareWithHf(*pc::LoadTokenizer(path), "json", path);
}

TEST_CASE("HF tokenizers oracle: Llama sentencepiece tokenizer.model via sentencepiece", "[tokenizer][oracle][shared]") {
  PC_REQUIRE_SHARED();
  PC_REQUIRE_REFENV();
  // The sentencepiece library (hf_tokenize.py explains why not transformers 5's conversion).
  std::string path = pc::test::SharedPath("tokenizers/llama-spm/tokenizer.model");
  CompareWithHf(*pc::LoadTokenizer(path), "sentencepiece", path);
}

TEST_CASE("HF tokenizers oracle: tiny-random-gpt2 folder via AutoTokenizer", "[tokenizer][oracle][shared]") {
  PC_REQUIRE_SHARED();
  PC_REQUIRE_REFENV();
  std::string path = pc::test::SharedPath("models/tiny-random-gpt2");
  CompareWithHf(*pc::LoadTokenizer(path), "folder", path);
}

TEST_CASE("HF tokenizers oracle: a vocab.json + merges.txt folder via AutoTokenizer", "[tokenizer][oracle][shared]") {
  PC_REQUIRE_SHARED();
  PC_REQUIRE_REFENV();
  // tiny-random-gpt2 without its tokenizer.json: transformers converts the GPT-2 slow tokenizer.
  std::string src = pc::test::SharedPath("models/tiny-random-gpt2"), dir = pc::test::TempDir("hf-vocab-merges");
  for (const char* f : {"vocab.json", "merges.txt", "special_tokens_map.json", "tokenizer_config.json", "config.json"}) {
    pc::test::WriteFileBytes(dir + "/" + f, pc::fs::ReadFile(src + "/" + f));
  }
  CompareWithHf(*pc::LoadTokenizer(dir), "folder", dir);
}
