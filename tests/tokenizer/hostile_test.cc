// Hostile tokenizer.json files (docs/RELIABILITY.md, "Hostile files"): a huge merges list and deep
// nesting load or are refused with a message naming the file, in bounded time, without a crash.
// LibTorch-free, so the sanitizer build (build-asan) runs these too.
#include <catch2/catch.hpp>

#include <string>

#include "core/fs.h"
#include "core/json_util.h"
#include "model/tokenizer/tokenizer.h"
#include "tests/test_support.h"
#include "tests/tokenizer/tok_test_util.h"

using Catch::Matchers::Contains;
using Ids = std::vector<int32_t>;

namespace {
constexpr size_t kHugeMerges = 1000000;

// A tokenizer.json whose model has vocab {a, b, ab} and `count` merges "a b", the last one
// replaced by `last` when not empty. Written as text: building a 1M-entry JSON document in the
// test would cost more than the load under test.
std::string HugeMergesJson(size_t count, const std::string& last = "") {
  std::string s = R"({"version":"1.0","added_tokens":[],"model":{"type":"BPE",)"
                  R"("vocab":{"a":0,"b":1,"ab":2},"merges":[)";
  s.reserve(s.size() + count * 6 + 64);
  for (size_t i = 0; i < count; ++i) {
    if (i > 0) s += ',';
    s += (i + 1 == count && !last.empty()) ? "\"" + last + "\"" : std::string("\"a b\"");
  }
  s += "]}}";
  return s;
}

std::string Nested(size_t depth, const std::string& inner = "0") {
  return std::string(depth, '[') + inner + std::string(depth, ']');
}

// A valid small tokenizer.json with `normalizer` as given.
std::string WithNormalizer(const std::string& normalizer) {
  return R"({"version":"1.0","added_tokens":[],"normalizer":)" + normalizer +
         R"(,"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]}})";
}

std::string Write(const std::string& name, const std::string& text) {
  std::string path = pc::test::TempDir("hostile-tok") + "/" + name;
  pc::test::WriteFileBytes(path, text);
  return path;
}

}  // namespace

TEST_CASE("hostile tokenizer.json: 1M merges load and encode", "[tokenizer][hostile]") {
  std::string path = Write("tokenizer.json", HugeMergesJson(kHugeMerges));
  auto tok = pc::LoadTokenizer(path);  // finishes (no timed assertion; CTest's timeout bounds it)
  CHECK(tok->vocab_size() == 3);
  CHECK(tok->Encode("abab") == Ids{2, 2});  // duplicate merges: a later one wins, as in HF
  CHECK(tok->Decode({2, 0}) == "ab a");
}

TEST_CASE("hostile tokenizer.json: a bad entry at the end of 1M merges names its index", "[tokenizer][hostile]") {
  std::string path = Write("tokenizer.json", HugeMergesJson(kHugeMerges, "a zz"));
  CHECK_THROWS_WITH(pc::LoadTokenizer(path),
                    Contains(path) && Contains("merges[999999] 'a zz': 'zz' is not in the vocabulary"));
  std::string three = Write("tokenizer.json", HugeMergesJson(kHugeMerges, "a b c"));
  CHECK_THROWS_WITH(pc::LoadTokenizer(three),
                    Contains(three) && Contains("model.merges[999999] 'a b c': expected two tokens separated by one space"));
}

TEST_CASE("hostile tokenizer.json: 100000 nested arrays are refused naming the file and the depth",
          "[tokenizer][hostile]") {
  std::string path = Write("tokenizer.json", Nested(100000));
  CHECK_THROWS_WITH(pc::LoadTokenizer(path), Contains(path) && Contains("JSON nested deeper than 128 levels"));
  // As a folder, and with the file's first byte '[' (no ".json" suffix, sniffed by content).
  CHECK_THROWS_WITH(pc::LoadTokenizer(pc::fs::Parent(path)), Contains("JSON nested deeper than 128 levels"));
  std::string objects;
  for (int i = 0; i < 100000; ++i) objects += "{\"a\":";
  objects += "0" + std::string(100000, '}');
  std::string obj_path = Write("tokenizer.json", objects);
  CHECK_THROWS_WITH(pc::LoadTokenizer(obj_path), Contains(obj_path) && Contains("JSON nested deeper than 128 levels"));
}

TEST_CASE("hostile tokenizer.json: deep nesting inside a section, in merges, in tokenizer_config.json",
          "[tokenizer][hostile]") {
  std::string in_normalizer = Write("tokenizer.json", WithNormalizer(Nested(100000)));
  CHECK_THROWS_WITH(pc::LoadTokenizer(in_normalizer),
                    Contains(in_normalizer) && Contains("JSON nested deeper than 128 levels"));
  // 100 levels is within the JSON limit: the normalizer's own check refuses it with its message.
  std::string shallow = Write("tokenizer.json", WithNormalizer(Nested(100)));
  CHECK_THROWS_WITH(pc::LoadTokenizer(shallow),
                    Contains(shallow) && Contains("normalizer: expected an object with a \"type\", got array"));

  std::string merges = Write("tokenizer.json", R"({"model":{"type":"BPE","vocab":{"a":0},"merges":)" +
                                                   Nested(100000, "\"a b\"") + "}}");
  CHECK_THROWS_WITH(pc::LoadTokenizer(merges), Contains(merges) && Contains("JSON nested deeper than 128 levels"));

  std::string dir = pc::test::TempDir("hostile-tok-config");
  pc::test::WriteFileBytes(dir + "/tokenizer.json", WithNormalizer("null"));
  pc::test::WriteFileBytes(dir + "/tokenizer_config.json", "{\"bos_token\":" + Nested(100000) + "}");
  CHECK_THROWS_WITH(pc::LoadTokenizer(dir),
                    Contains(dir + "/tokenizer_config.json") && Contains("JSON nested deeper than 128 levels"));
}
