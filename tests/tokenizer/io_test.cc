// SaveTokenizerJson / SaveTokenizerFiles: what is written loads back with the same Encode and Decode.
#include <catch2/catch.hpp>

#include "core/fs.h"
#include "core/json_util.h"
#include "model/tokenizer/tokenizer.h"
#include "tests/test_support.h"
#include "tests/tokenizer/tok_test_util.h"

using Catch::Matchers::Contains;

using pc::test::CheckSameTokenizer;

TEST_CASE("GPT-NeoX tokenizer.json: save, reload, same tokenizer", "[tokenizer][shared]") {
  PC_REQUIRE_SHARED();
  auto tok = pc::LoadTokenizer(pc::test::SharedPath("tokenizers/gpt-neox-20b"));
  std::string path = pc::test::TempDir("io-neox") + "/tokenizer.json";
  pc::SaveTokenizerJson(*tok, path);
  auto again = pc::LoadTokenizer(path);
  CheckSameTokenizer(*tok, *again);
  auto vectors = pc::test::ReadTokenizerVectors(pc::test::SharedPath("tokenizers/gpt-neox-20b"));
  for (const auto& v : vectors) CHECK(again->Encode(v.text) == v.ids);
  auto doc = pc::LoadJsonFile(path);
  CHECK(doc["model"]["merges"].size() == 50009);
  CHECK(doc["normalizer"]["type"] == "NFC");
  CHECK(doc["added_tokens"].size() == 25);
}

TEST_CASE("tiny-random-gpt2: SaveTokenizerFiles writes what transformers reads", "[tokenizer][shared]") {
  PC_REQUIRE_SHARED();
  auto tok = pc::LoadTokenizer(pc::test::SharedPath("models/tiny-random-gpt2"));
  std::string dir = pc::test::TempDir("io-gpt2");
  pc::SaveTokenizerFiles(*tok, dir);
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"}) {
    CHECK(pc::fs::Exists(dir + "/" + f));
  }
  auto config = pc::LoadJsonFile(dir + "/tokenizer_config.json");
  CHECK(config["bos_token"] == "<|endoftext|>");
  CHECK(config["tokenizer_class"] == "PreTrainedTokenizerFast");
  CHECK(config["add_bos_token"] == false);
  CheckSameTokenizer(*tok, *pc::LoadTokenizer(dir));
}

TEST_CASE("Llama tokenizer.model: SaveTokenizerFiles writes tokenizer.model and its tokenizer.json",
          "[tokenizer][shared]") {
  PC_REQUIRE_SHARED();
  std::string model = pc::test::SharedPath("tokenizers/llama-spm/tokenizer.model");
  auto sp = pc::LoadTokenizer(model);
  std::string dir = pc::test::TempDir("io-llama");
  pc::SaveTokenizerFiles(*sp, dir);
  CHECK(pc::fs::ReadFile(dir + "/tokenizer.model") == pc::fs::ReadFile(model));  // the original bytes
  auto loaded = pc::LoadTokenizer(dir);  // the folder prefers tokenizer.json
  CHECK(loaded->kind() == "bpe-sentencepiece");
  CHECK(loaded->sentencepiece_model().empty());  // read from tokenizer.json
  CheckSameTokenizer(*sp, *loaded);
  CHECK(loaded->Decode(loaded->Encode("a <s> b"), false) == "a <s>  b");
  auto config = pc::LoadJsonFile(dir + "/tokenizer_config.json");
  CHECK(config["bos_token"] == "<s>");
  CHECK(config["eos_token"] == "</s>");
  CHECK(config["add_bos_token"] == true);
  CHECK(config["tokenizer_class"] == "PreTrainedTokenizerFast");
  auto doc = pc::LoadJsonFile(dir + "/tokenizer.json");
  CHECK(doc["model"]["byte_fallback"] == true);
  CHECK(doc["decoder"]["type"] == "Sequence");
  // The tokenizer.json file alone gives the vectors' ids.
  auto json_only = pc::LoadTokenizer(dir + "/tokenizer.json");
  for (const auto& v : pc::test::ReadTokenizerVectors(pc::test::SharedPath("tokenizers/llama-spm"))) {
    CHECK(json_only->Encode(v.text) == v.ids);
  }
}

TEST_CASE("llama2.c tokenizer: save and reload", "[tokenizer][shared]") {
  PC_REQUIRE_SHARED();
  auto tok = pc::TokenizerFromLlama2c(pc::test::SharedPath("models/stories260K/tok512.bin"), 512);
  std::string dir = pc::test::TempDir("io-llama2c");
  pc::SaveTokenizerFiles(*tok, dir);
  CheckSameTokenizer(*tok, *pc::LoadTokenizer(dir));
  CheckSameTokenizer(*tok, *pc::LoadTokenizer(dir + "/tokenizer.json"));  // bos/eos also without the config files
}

TEST_CASE("merges with a space in a token are written as pairs", "[tokenizer]") {
  std::string dir = pc::test::TempDir("io-pairs");
  nlohmann::json doc = {{"model",
                         {{"type", "BPE"},
                          {"vocab", {{"a", 0}, {" ", 1}, {"a ", 2}, {"b", 3}}},
                          {"merges", nlohmann::json::array({nlohmann::json::array({"a", " "})})}}}};
  pc::test::WriteFileBytes(dir + "/in.json", doc.dump());
  auto tok = pc::LoadTokenizer(dir + "/in.json");
  CHECK(tok->Encode("a b") == std::vector<int32_t>{2, 3});
  pc::SaveTokenizerJson(*tok, dir + "/out.json");
  auto saved = pc::LoadJsonFile(dir + "/out.json");
  CHECK(saved["model"]["merges"][0] == nlohmann::json::array({"a", " "}));
  CHECK(pc::LoadTokenizer(dir + "/out.json")->Encode("a b") == std::vector<int32_t>{2, 3});
}

namespace {
// A copy of tiny-random-gpt2's tokenizer files without tokenizer.json (as GPT-2/OPT repositories
// publish them); `config` replaces tokenizer_config.json when given.
std::string VocabMergesFolder(const std::string& name, const std::string& config = "") {
  std::string src = pc::test::SharedPath("models/tiny-random-gpt2"), dir = pc::test::TempDir(name);
  for (const char* f : {"vocab.json", "merges.txt", "special_tokens_map.json", "tokenizer_config.json"}) {
    pc::test::WriteFileBytes(dir + "/" + f, pc::fs::ReadFile(src + "/" + f));
  }
  if (!config.empty()) pc::test::WriteFileBytes(dir + "/tokenizer_config.json", config);
  return dir;
}
}  // namespace

TEST_CASE("vocab.json + merges.txt folder loads as its tokenizer.json", "[tokenizer][shared]") {
  PC_REQUIRE_SHARED();
  auto json = pc::LoadTokenizer(pc::test::SharedPath("models/tiny-random-gpt2/tokenizer.json"));
  auto files = pc::LoadTokenizer(VocabMergesFolder("vm-gpt2"));
  CHECK(files->kind() == "bpe-bytelevel");
  CheckSameTokenizer(*json, *files);
  CHECK(files->prefix_ids().empty());
  // OPT's tokenizer_config.json: add_bos_token puts the bos token first.
  auto opt = pc::LoadTokenizer(VocabMergesFolder(
      "vm-opt", R"({"add_bos_token": true, "bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>"})"));
  CHECK(opt->prefix_ids() == std::vector<int32_t>{0});
  CHECK(opt->Encode("hello world") == json->Encode("hello world"));
}

TEST_CASE("vocab.json + merges.txt: a bad merges line is an error naming the line", "[tokenizer][shared]") {
  PC_REQUIRE_SHARED();
  std::string dir = VocabMergesFolder("vm-bad");
  pc::test::WriteFileBytes(dir + "/merges.txt", "#version: 0.2\nĠ t\nh e x\n");
  CHECK_THROWS_WITH(pc::LoadTokenizer(dir), Contains("merges.txt line 3: expected two pieces separated by one space, got 'h e x'"));
}
