// Reference tokenizations produced by Hugging Face tokenizers (README.md).
#include <catch2/catch.hpp>

#include "core/fs.h"
#include "model/tokenizer/normalizer.h"
#include "model/tokenizer/tokenizer.h"
#include "model/tokenizer/utf8.h"
#include "tests/test_support.h"
#include "tests/tokenizer/tok_test_util.h"

using pc::test::IdsString;

namespace {
// Checks every vector; reports each failing case with its text.
void CheckVectors(const pc::Tokenizer& tok, const std::string& folder) {
  auto vectors = pc::test::ReadTokenizerVectors(folder);
  REQUIRE(vectors.size() == 46);
  int passed = 0;
  for (size_t i = 0; i < vectors.size(); ++i) {
    std::vector<int32_t> got = tok.Encode(vectors[i].text);
    if (got == vectors[i].ids) {
      ++passed;
    } else {
      FAIL_CHECK("case " << i << " text '" << vectors[i].text << "'\n  expected" << IdsString(vectors[i].ids)
                         << "\n  got     " << IdsString(got));
    }
  }
  INFO(folder);
  CHECK(passed == 46);
}
}  // namespace

TEST_CASE("GPT-NeoX tokenizer.json reproduces the 46 Hugging Face vectors", "[tokenizer][shared]") {
  PC_REQUIRE_SHARED();
  std::string folder = pc::test::SharedPath("tokenizers/gpt-neox-20b");
  auto tok = pc::LoadTokenizer(folder);
  CHECK(tok->kind() == "bpe-bytelevel");
  CHECK(tok->vocab_size() == 50277);
  CHECK(tok->prefix_ids().empty());
  CHECK(tok->bos_id() == 0);
  CHECK(tok->eos_id() == 0);
  CHECK(tok->IdToPiece(0) == "<|endoftext|>");
  CHECK(tok->PieceToId("<|padding|>") == 1);
  CHECK(tok->PieceToId("no such piece") == -1);
  CheckVectors(*tok, folder);
  // Special tokens typed in the text are matched; decoding skips them unless asked.
  CHECK(tok->Encode("a<|endoftext|>b") == std::vector<int32_t>{66, 0, 67});
  CHECK(tok->Decode({66, 0, 67}) == "ab");
  CHECK(tok->Decode({66, 0, 67}, false) == "a<|endoftext|>b");
}

TEST_CASE("GPT-NeoX: decode(encode(x)) == x on the vectors and WikiText", "[tokenizer][shared]") {
  PC_REQUIRE_SHARED();
  auto tok = pc::LoadTokenizer(pc::test::SharedPath("tokenizers/gpt-neox-20b/tokenizer.json"));
  for (const auto& v : pc::test::ReadTokenizerVectors(pc::test::SharedPath("tokenizers/gpt-neox-20b"))) {
    CHECK(tok->Decode(tok->Encode(v.text)) == v.text);
  }
  for (const std::string& line : pc::test::WikiTextLines(300)) CHECK(tok->Decode(tok->Encode(line)) == line);
}

TEST_CASE("GPT-NeoX normalizes to NFC before tokenizing", "[tokenizer][shared]") {
  PC_REQUIRE_SHARED();
  auto tok = pc::LoadTokenizer(pc::test::SharedPath("tokenizers/gpt-neox-20b"));
  // "é" decomposed (e + U+0301) tokenizes as the precomposed character; decoding returns NFC text.
  CHECK(tok->Encode("caf\x65\xCC\x81") == tok->Encode("caf\xC3\xA9"));
  CHECK(tok->Decode(tok->Encode("caf\x65\xCC\x81")) == "caf\xC3\xA9");
}

TEST_CASE("Llama tokenizer.model, read natively, reproduces the 46 Hugging Face vectors", "[tokenizer][shared]") {
  PC_REQUIRE_SHARED();
  std::string folder = pc::test::SharedPath("tokenizers/llama-spm");
  std::string model = pc::fs::Join(folder, "tokenizer.model");
  auto tok = pc::LoadTokenizer(model);
  CHECK(tok->kind() == "bpe-sentencepiece");  // the tokenizer.json form (LlamaConverter), no libsentencepiece
  CHECK(tok->vocab_size() == 32000);
  CHECK(tok->bos_id() == 1);
  CHECK(tok->eos_id() == 2);
  CHECK(tok->unk_id() == 0);
  CHECK(tok->prefix_ids() == std::vector<int32_t>{1});
  CHECK(tok->sentencepiece_model() == pc::fs::ReadFile(model));
  CHECK(tok->EncodeWithSpecial("Hello world") == std::vector<int32_t>{1, 15043, 3186});
  CHECK(tok->PieceToId("\xE2\x96\x81Hello") == 15043);
  CHECK(tok->PieceToId("no such piece") == -1);
  CheckVectors(*tok, folder);
  CHECK(tok->Decode(tok->EncodeWithSpecial("Hello world")) == "Hello world");
  CHECK(tok->Decode({1, 15043}, false) == "<s> Hello");  // as Hugging Face's fast Llama tokenizer
  // The folder (only tokenizer.model) and TokenizerFromSentencePieceBpe load the same tokenizer.
  for (const auto& other : {pc::LoadTokenizer(folder), pc::TokenizerFromSentencePieceBpe(model)}) {
    CHECK(other->kind() == "bpe-sentencepiece");
    CheckVectors(*other, folder);
  }
}

TEST_CASE("tiny-random-gpt2 tokenizer.json loads and round-trips", "[tokenizer][shared]") {
  PC_REQUIRE_SHARED();
  auto tok = pc::LoadTokenizer(pc::test::SharedPath("models/tiny-random-gpt2"));
  CHECK(tok->kind() == "bpe-bytelevel");
  CHECK(tok->vocab_size() == 1000);
  CHECK(tok->prefix_ids().empty());
  CHECK(tok->bos_id() == 0);  // tokenizer_config.json's "<|endoftext|>" (config.json's 98 disagrees, as upstream)
  CHECK(tok->eos_id() == 0);
  CHECK(tok->unk_id() == 0);
  // Its 1000-token vocabulary lacks 63 of the 256 byte characters (tab, CR, '{', some UTF-8 lead
  // bytes); without unk or byte_fallback those are dropped, as Hugging Face does.
  const auto& alphabet = pc::tok::ByteLevelAlphabet::Get();
  auto all_bytes_known = [&](const std::string& text) {
    for (unsigned char b : text) {
      if (tok->PieceToId(alphabet.Encode(b)) < 0) return false;
    }
    return true;
  };
  int round_trips = 0;
  for (const std::string& text : pc::test::TrickyTexts()) {
    std::vector<int32_t> ids = tok->Encode(text);
    for (int32_t id : ids) REQUIRE((id >= 0 && id < tok->vocab_size()));
    if (all_bytes_known(text)) {
      CHECK(tok->Decode(ids) == text);
      ++round_trips;
    }
  }
  CHECK(round_trips >= 12);
  CHECK(tok->Decode(tok->Encode("\tx{y}")) == "xy}");  // tab and '{' are not in this vocabulary
  CHECK(tok->Encode(" the").size() == 1);            // merges apply
}

TEST_CASE("GPT-NeoX: decode(encode(x)) == NFC(x) for random UTF-8", "[tokenizer][shared]") {
  PC_REQUIRE_SHARED();
  auto tok = pc::LoadTokenizer(pc::test::SharedPath("tokenizers/gpt-neox-20b"));
  for (uint32_t i = 0; i < 1500; ++i) {
    std::string x = pc::test::RandomUtf8(i, 50);
    std::string nfc = x;
    pc::tok::NormalizeUnicode(pc::tok::UnicodeForm::kNfc, &nfc);
    REQUIRE(tok->Decode(tok->Encode(x)) == nfc);
  }
}
