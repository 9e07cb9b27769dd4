// pc_tokenizer_spm (libsentencepiece itself) as an independent check of the native tokenizer.model
// reader: same vectors, same special ids, same ids on the whole WikiText-2 test file. This binary has
// no LibTorch, so libsentencepiece can load here (it cannot beside LibTorch; see libsentencepiece.h).
#include <catch2/catch.hpp>

#include <sentencepiece_processor.h>

#include "core/fs.h"
#include "model/tokenizer/libsentencepiece.h"
#include "model/tokenizer/tokenizer.h"
#include "tests/test_support.h"
#include "tests/tokenizer/tok_test_util.h"

using Catch::Matchers::Contains;
using Ids = std::vector<int32_t>;

TEST_CASE("libsentencepiece: Llama tokenizer.model reproduces the 46 Hugging Face vectors", "[tokenizer][shared]") {
  PC_REQUIRE_SHARED();
  std::string folder = pc::test::SharedPath("tokenizers/llama-spm");
  auto tok = pc::LoadSentencePieceModel(pc::fs::Join(folder, "tokenizer.model"));
  CHECK(tok->kind() == "sentencepiece-model");
  CHECK(tok->vocab_size() == 32000);
  CHECK(tok->bos_id() == 1);
  CHECK(tok->eos_id() == 2);
  CHECK(tok->unk_id() == 0);
  CHECK(tok->prefix_ids() == Ids{1});
  CHECK(tok->EncodeWithSpecial("Hello world") == Ids{1, 15043, 3186});
  CHECK(tok->PieceToId("no such piece") == -1);
  auto vectors = pc::test::ReadTokenizerVectors(folder);
  REQUIRE(vectors.size() == 46);
  int passed = 0;
  for (const auto& v : vectors) {
    std::vector<int32_t> got = tok->Encode(v.text);
    passed += got == v.ids;
    if (got != v.ids) FAIL_CHECK("text '" << v.text << "' got" << pc::test::IdsString(got));
  }
  CHECK(passed == 46);
  CHECK(tok->Decode({1, 15043}, false) == "<s>Hello");  // sentencepiece drops the dummy prefix after <s>
}

TEST_CASE("native tokenizer.model reader equals libsentencepiece (Llama)", "[tokenizer][shared]") {
  PC_REQUIRE_SHARED();
  std::string model = pc::test::SharedPath("tokenizers/llama-spm/tokenizer.model");
  auto native = pc::LoadTokenizer(model);
  auto sp = pc::LoadSentencePieceModel(model);
  REQUIRE(native->kind() == "bpe-sentencepiece");
  pc::test::CheckSameTokenizer(*sp, *native, /*compare_special_decode=*/false);
  for (int32_t id = 0; id < sp->vocab_size(); ++id) {
    REQUIRE(native->IdToPiece(id) == sp->IdToPiece(id));
    REQUIRE(native->IsSpecial(id) == sp->IsSpecial(id));
  }
  CHECK(native->sentencepiece_model() == sp->sentencepiece_model());
  for (uint32_t i = 0; i < 300; ++i) {
    std::string x = pc::test::RandomUtf8(i, 40);
    REQUIRE(native->Encode(x) == sp->Encode(x));
  }
}

TEST_CASE("native vs libsentencepiece on the whole WikiText-2 test file, and cutting at spaces",
          "[tokenizer][shared]") {
  PC_REQUIRE_SHARED();
  std::string model = pc::test::SharedPath("tokenizers/llama-spm/tokenizer.model");
  std::string wiki = pc::fs::ReadFile(pc::test::SharedPath("text/wikitext-2/wiki.test.raw.txt"));
  auto tok = pc::LoadSentencePieceModel(model);
  // libsentencepiece on one uncut input (slow: about 2 us per byte, hence a 150 kB prefix) equals
  // the sentencepiece-model tokenizer, which cuts the text at spaces and caches words.
  sentencepiece::SentencePieceProcessor sp;
  REQUIRE(sp.Load(model).ok());
  std::string prefix = wiki.substr(0, 150000);
  prefix.resize(prefix.rfind(' ') + 1);  // ends with a space: the final-space rule is exercised
  std::vector<int> whole;
  REQUIRE(sp.Encode(prefix, &whole).ok());
  CHECK(tok->Encode(prefix) == Ids(whole.begin(), whole.end()));
  // The whole text: the native reader (our BPE engine) gives the same ids.
  std::vector<int32_t> ids = tok->Encode(wiki);
  CHECK(ids.size() == 341468);
  CHECK(pc::LoadTokenizer(model)->Encode(wiki) == ids);
}

TEST_CASE("native vs libsentencepiece on small hand-made models", "[tokenizer]") {
  using pc::test::ProtoBytes;
  using pc::test::ProtoInt;
  std::string dir = pc::test::TempDir("spm-small");
  std::string named = pc::test::SpPieceProto("<unk>", 0, 2) + pc::test::SpPieceProto("<eos>", 0, 3) +
                      pc::test::SpPieceProto("<bos>", 0, 3) + pc::test::SpPieceProto("a", -1, 1) +
                      pc::test::SpPieceProto("\xE2\x96\x81", -2, 1) +
                      ProtoBytes(2, ProtoInt(3, 2) + ProtoBytes(46, "<bos>") + ProtoBytes(47, "<eos>")) +
                      pc::test::SpNormalizerProto();
  std::string no_bos = pc::test::SpPieceProto("<unk>", 0, 2) + pc::test::SpPieceProto("</s>", 0, 1) +
                       pc::test::SpPieceProto("a", -1, 1) + ProtoBytes(2, ProtoInt(3, 2) + ProtoInt(41, -1)) +
                       pc::test::SpNormalizerProto();
  for (const auto& [name, bytes] : {std::pair<std::string, std::string>{"small", pc::test::SpSmallModel(2)},
                                    {"named", named},
                                    {"no_bos", no_bos}}) {
    INFO(name);
    std::string path = dir + "/" + name + ".model";
    pc::test::WriteFileBytes(path, bytes);
    auto native = pc::LoadTokenizer(path);
    auto sp = pc::LoadSentencePieceModel(path);
    CHECK(native->bos_id() == sp->bos_id());
    CHECK(native->eos_id() == sp->eos_id());
    CHECK(native->unk_id() == sp->unk_id());
    CHECK(native->prefix_ids() == sp->prefix_ids());
    for (const char* text : {"ab a", "ab c", "a", " a  b ", "ba ab aab", "a<s>b</s>a", ""}) {
      INFO(text);
      CHECK(native->Encode(text) == sp->Encode(text));
    }
  }
}

TEST_CASE("libsentencepiece reads a Unigram model, which the native reader refuses", "[tokenizer]") {
  std::string dir = pc::test::TempDir("spm-unigram");
  pc::test::WriteFileBytes(dir + "/unigram.model", pc::test::SpSmallModel(1));
  auto uni = pc::LoadSentencePieceModel(dir + "/unigram.model");
  CHECK(uni->kind() == "sentencepiece-model");
  CHECK(uni->Encode("ab a") == Ids{8, 6});
  CHECK(uni->Decode(uni->Encode("ab a")) == "ab a");
  CHECK_THROWS_WITH(pc::SaveTokenizerJson(*uni, dir + "/out.json"),
                    Contains("cannot write a tokenizer.json") && Contains("UNIGRAM model (only BPE models convert)"));
  // SaveTokenizerFiles writes the model and the configs, but no tokenizer.json ...
  pc::SaveTokenizerFiles(*uni, dir + "/saved");
  CHECK(pc::fs::ReadFile(dir + "/saved/tokenizer.model") == pc::test::SpSmallModel(1));
  CHECK_FALSE(pc::fs::Exists(dir + "/saved/tokenizer.json"));
  CHECK(pc::fs::Exists(dir + "/saved/tokenizer_config.json"));
  // ... and LoadTokenizer (native) says why it cannot read that folder.
  CHECK_THROWS_WITH(pc::LoadTokenizer(dir + "/saved"), Contains("saved/tokenizer.model: unsupported sentencepiece "
                                                                "model: it is a sentencepiece UNIGRAM model"));
  CHECK_THROWS_WITH(pc::LoadSentencePieceModel(dir + "/none.model"), Contains("does not exist"));
}

TEST_CASE("libsentencepiece Llama tokenizer: SaveTokenizerFiles converts it", "[tokenizer][shared]") {
  PC_REQUIRE_SHARED();
  std::string model = pc::test::SharedPath("tokenizers/llama-spm/tokenizer.model");
  auto sp = pc::LoadSentencePieceModel(model);
  std::string dir = pc::test::TempDir("spm-save");
  pc::SaveTokenizerFiles(*sp, dir);
  CHECK(pc::fs::ReadFile(dir + "/tokenizer.model") == pc::fs::ReadFile(model));
  auto loaded = pc::LoadTokenizer(dir);
  CHECK(loaded->kind() == "bpe-sentencepiece");
  pc::test::CheckSameTokenizer(*sp, *loaded, /*compare_special_decode=*/false);
  CHECK(sp->Decode(sp->Encode("a <s> b"), false) == "a <s> b");
  CHECK(loaded->Decode(loaded->Encode("a <s> b"), false) == "a <s>  b");
}
