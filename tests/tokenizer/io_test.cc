// SaveTokenizerJson / SaveTokenizerFiles: what is written loads back with the same Encode and Decode.
#include <catch2/catch.hpp>

#include "core/fs.h"
#include "core/json_util.h"
#include "model/tokenizer/tokenizer.h"
#include "tests/test_support.h"
#include "tests/tokenizer/tok_test_util.h"

using Catch::Matchers::Contains;

namespace {
std::vector<std::string> Texts() {
  std::vector<std::string> texts = pc::test::TrickyTexts();
  for (const auto& line : pc::test::WikiTextLines(100)) texts.push_back(line);
  texts.push_back("special <|endoftext|> and <s> </s> <unk> typed in");
  return texts;
}

// compare_special_decode false: sentencepiece decodes the text after each special token without its
// dummy-prefix space, the tokenizer.json form keeps it (as Hugging Face's fast Llama tokenizer does).
void CheckSame(const pc::Tokenizer& a, const pc::Tokenizer& b, bool compare_special_decode = true) {
  CHECK(a.vocab_size() == b.vocab_size());
  CHECK(a.bos_id() == b.bos_id());
  CHECK(a.eos_id() == b.eos_id());
  CHECK(a.unk_id() == b.unk_id());
  CHECK(a.prefix_ids() == b.prefix_ids());
  for (int32_t id = 0; id < a.vocab_size(); id += 97) CHECK(a.IdToPiece(id) == b.IdToPiece(id));
  for (const std::string& text : Texts()) {
    std::vector<int32_t> ids = a.Encode(text);
    CHECK(b.Encode(text) == ids);
    CHECK(b.Decode(ids) == a.Decode(ids));
    if (compare_special_decode) CHECK(b.Decode(ids, false) == a.Decode(ids, false));
  }
}
}  // namespace

TEST_CASE("GPT-NeoX tokenizer.json: save, reload, same tokenizer", "[tokenizer][shared]") {
  PC_REQUIRE_SHARED();
  auto tok = pc::LoadTokenizer(pc::test::SharedPath("tokenizers/gpt-neox-20b"));
  std::string path = pc::test::TempDir("io-neox") + "/tokenizer.json";
  pc::SaveTokenizerJson(*tok, path);
  auto again = pc::LoadTokenizer(path);
  CheckSame(*tok, *again);
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
  CheckSame(*tok, *pc::LoadTokenizer(dir));
}

TEST_CASE("Llama tokenizer.model: SaveTokenizerFiles writes tokenizer.model and its tokenizer.json",
          "[tokenizer][shared]") {
  PC_REQUIRE_SHARED();
  auto sp = pc::LoadTokenizer(pc::test::SharedPath("tokenizers/llama-spm/tokenizer.model"));
  std::string dir = pc::test::TempDir("io-llama");
  pc::SaveTokenizerFiles(*sp, dir);
  CHECK(pc::fs::ReadFile(dir + "/tokenizer.model") ==
        pc::fs::ReadFile(pc::test::SharedPath("tokenizers/llama-spm/tokenizer.model")));
  auto loaded = pc::LoadTokenizer(dir);  // the folder prefers tokenizer.json
  CHECK(loaded->kind() == "bpe-sentencepiece");
  CheckSame(*sp, *loaded, /*compare_special_decode=*/false);
  CHECK(sp->Decode(sp->Encode("a <s> b"), false) == "a <s> b");
  CHECK(loaded->Decode(loaded->Encode("a <s> b"), false) == "a <s>  b");
  auto config = pc::LoadJsonFile(dir + "/tokenizer_config.json");
  CHECK(config["bos_token"] == "<s>");
  CHECK(config["eos_token"] == "</s>");
  CHECK(config["add_bos_token"] == true);
  auto doc = pc::LoadJsonFile(dir + "/tokenizer.json");
  CHECK(doc["model"]["byte_fallback"] == true);
  CHECK(doc["decoder"]["type"] == "Sequence");
  // The tokenizer.json file alone gives the same ids as the sentencepiece model.
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
  CheckSame(*tok, *pc::LoadTokenizer(dir));
  CheckSame(*tok, *pc::LoadTokenizer(dir + "/tokenizer.json"));  // bos/eos also without the config files
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
