// The BPE model and tokenizer.json loading on small hand-made files: merge order, unknown
// characters, options, and every error path (with its message).
#include <catch2/catch.hpp>

#include <chrono>

#include "core/fs.h"
#include "model/tokenizer/bpe_tokenizer.h"
#include "model/tokenizer/tokenizer.h"
#include "tests/test_support.h"
#include "tests/tokenizer/tok_test_util.h"

using Catch::Matchers::Contains;
using nlohmann::json;
using Ids = std::vector<int32_t>;

namespace {
// A tokenizer.json with no normalizer/pre-tokenizer/decoder around a BPE model.
json Doc(json vocab, json merges, json model_extra = json::object()) {
  json model = {{"type", "BPE"}, {"vocab", std::move(vocab)}, {"merges", std::move(merges)}};
  for (auto it = model_extra.begin(); it != model_extra.end(); ++it) model[it.key()] = it.value();
  return {{"version", "1.0"}, {"added_tokens", json::array()}, {"model", model}};
}
pc::tok::BpeTokenizer Make(json doc) { return pc::tok::BpeTokenizer(std::move(doc), "test.json"); }
json AbcVocab() { return {{"a", 0}, {"b", 1}, {"c", 2}, {"ab", 3}, {"bc", 4}, {"abc", 5}, {"aa", 6}}; }
}  // namespace

TEST_CASE("BPE merges by rank, leftmost first", "[tokenizer]") {
  auto t = Make(Doc(AbcVocab(), {"a b", "b c", "ab c", "a a"}));
  CHECK(t.Encode("abc") == Ids{5});    // a b (rank 0) first, then ab c
  CHECK(t.Encode("bc") == Ids{4});
  CHECK(t.Encode("aaa") == Ids{6, 0});  // leftmost pair first
  CHECK(t.Encode("cab") == Ids{2, 3});
  auto u = Make(Doc(AbcVocab(), {"b c", "a b", "ab c"}));
  CHECK(u.Encode("abc") == Ids{0, 4});  // b c ranks first; "a bc" is not listed -> stays apart
  auto pairs = Make(Doc(AbcVocab(), json::array({json::array({"a", "b"}), json::array({"ab", "c"})})));
  CHECK(pairs.Encode("abc") == Ids{5});  // the [a, b] merge form
  CHECK(t.Decode({5, 0}) == "abc a");     // no decoder: tokens joined with spaces, as HF
  CHECK(t.kind() == "bpe");
}

TEST_CASE("BPE unknown characters: dropped, unk, fused unk, byte fallback", "[tokenizer]") {
  CHECK(Make(Doc(AbcVocab(), {"a b"})).Encode("axb") == Ids{3});  // x dropped (no unk) before merging, as HF
  json vocab = AbcVocab();
  vocab["<unk>"] = 7;
  CHECK(Make(Doc(vocab, {"a b"}, {{"unk_token", "<unk>"}})).Encode("axyb") == Ids{0, 7, 7, 1});
  CHECK(Make(Doc(vocab, {"a b"}, {{"unk_token", "<unk>"}, {"fuse_unk", true}})).Encode("axyb") == Ids{0, 7, 1});
  vocab["<0xC3>"] = 8;
  vocab["<0xA9>"] = 9;
  auto bf = Make(Doc(vocab, {"a b"}, {{"unk_token", "<unk>"}, {"byte_fallback", true}}));
  CHECK(bf.Encode("a\xC3\xA9z") == Ids{0, 8, 9, 7});  // é -> its two bytes; z has no byte tokens -> unk
  CHECK(bf.unk_id() == 7);
}

TEST_CASE("BPE options: continuing_subword_prefix, end_of_word_suffix, ignore_merges", "[tokenizer]") {
  json vocab = {{"a", 0}, {"##b", 1}, {"ab", 2}, {"b", 3}};
  auto prefix = Make(Doc(vocab, {"a ##b"}, {{"continuing_subword_prefix", "##"}}));
  CHECK(prefix.Encode("ab") == Ids{2});
  json sfx_vocab = {{"a", 0}, {"b</w>", 1}, {"ab</w>", 2}};
  CHECK(Make(Doc(sfx_vocab, {"a b</w>"}, {{"end_of_word_suffix", "</w>"}})).Encode("ab") == Ids{2});
  json im = {{"a", 0}, {"b", 1}, {"c", 2}, {"abc", 3}};
  CHECK(Make(Doc(im, json::array(), {{"ignore_merges", true}})).Encode("abc") == Ids{3});
  CHECK(Make(Doc(im, json::array())).Encode("abc") == Ids{0, 1, 2});
}

TEST_CASE("tokenizer.json errors name the file, the entry and what was expected", "[tokenizer]") {
  std::string dir = pc::test::TempDir("tok-errors");
  auto load_text = [&](const std::string& name, const std::string& text) {
    std::string path = dir + "/" + name;
    pc::test::WriteFileBytes(path, text);
    return pc::LoadTokenizer(path);
  };
  CHECK_THROWS_WITH(load_text("broken.json", "{\"model\": {\"type\": \"BPE\",}"),
                    Contains("broken.json") && Contains("invalid JSON at byte"));
  CHECK_THROWS_WITH(load_text("deep.json", std::string(500, '[') + std::string(500, ']')),
                    Contains("nested deeper than"));
  CHECK_THROWS_WITH(pc::LoadTokenizer(dir + "/missing.json"), Contains("does not exist"));
  CHECK_THROWS_WITH(pc::LoadTokenizer(dir), Contains("neither tokenizer.json nor tokenizer.model"));

  CHECK_THROWS_WITH(Make({{"model", {{"type", "WordPiece"}, {"vocab", {{"a", 0}}}}}}),
                    Contains("unsupported model type 'WordPiece'") && Contains("supported: BPE"));
  CHECK_THROWS_WITH(Make({{"model", {{"type", "Unigram"}, {"vocab", json::array()}}}}),
                    Contains("unsupported model type 'Unigram'"));
  CHECK_THROWS_WITH(Make({{"version", "1.0"}}), Contains("test.json: missing \"model\""));
  CHECK_THROWS_WITH(Make({{"model", {{"type", "BPE"}, {"merges", json::array()}}}}), Contains("missing model.vocab"));
  CHECK_THROWS_WITH(Make(Doc(AbcVocab(), {"a b", "x c"})),
                    Contains("merges[1] 'x c'") && Contains("'x' is not in the vocabulary"));
  CHECK_THROWS_WITH(Make(Doc(AbcVocab(), {"c a"})), Contains("the merged token 'ca' is not in the vocabulary"));
  CHECK_THROWS_WITH(Make(Doc(AbcVocab(), {"a b c"})),
                    Contains("merges[0] 'a b c'") && Contains("two tokens separated by one space"));
  CHECK_THROWS_WITH(Make(Doc(AbcVocab(), {json::array({"a"})})), Contains("merges[0]"));
  CHECK_THROWS_WITH(Make(Doc({{"a", 0}, {"b", 0}}, json::array())), Contains("duplicate id 0"));
  CHECK_THROWS_WITH(Make(Doc({{"a", 0}, {"b", 2}}, json::array())), Contains("id 1 has no token"));
  CHECK_THROWS_WITH(Make(Doc({{"a", -1}}, json::array())), Contains("model.vocab['a'] has id -1"));
  CHECK_THROWS_WITH(Make(Doc({{"a", "zero"}}, json::array())), Contains("model.vocab['a'] must be an integer id"));
  CHECK_THROWS_WITH(Make(Doc(AbcVocab(), json::array(), {{"unk_token", "<unk>"}})),
                    Contains("unk_token '<unk>' is not in the vocabulary"));
  CHECK_THROWS_WITH(Make(Doc(AbcVocab(), json::array(), {{"dropout", 0.1}})), Contains("dropout"));
  json doc = Doc(AbcVocab(), json::array());
  doc["added_tokens"] = {{{"id", 1}, {"content", "<s>"}, {"special", true}}};
  CHECK_THROWS_WITH(Make(doc), Contains("duplicate id 1"));
  doc["added_tokens"] = {{{"id", 9}, {"content", "a"}, {"special", true}}};
  CHECK_THROWS_WITH(Make(doc), Contains("added token 'a' has id 9 but the vocabulary gives it id 0"));
  doc["added_tokens"] = {{{"content", "<s>"}}};
  CHECK_THROWS_WITH(Make(doc), Contains("added_tokens[0]: missing key 'id'"));
  doc = Doc(AbcVocab(), json::array());
  doc["pre_tokenizer"] = {{"type", "BertPreTokenizer"}};
  CHECK_THROWS_WITH(Make(doc), Contains("test.json: pre_tokenizer: unsupported pre_tokenizer type 'BertPreTokenizer'"));
  doc = Doc(AbcVocab(), json::array());
  doc["post_processor"] = {{"type", "TemplateProcessing"}, {"single", "$A"},};
  doc["added_tokens"] = json::array();
  CHECK_NOTHROW(Make(doc));
  doc["post_processor"] = {{"type", "TemplateProcessing"},
                           {"single", "<s> $A"},
                           {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {70}}, {"tokens", {"<s>"}}}}}}};
  CHECK_THROWS_WITH(Make(doc), Contains("id 70 is out of range"));
}

TEST_CASE("encode/decode argument errors", "[tokenizer]") {
  auto t = Make(Doc(AbcVocab(), {"a b"}));
  CHECK_THROWS_WITH(t.Encode("a\xFF" "b"), Contains("not valid UTF-8") && Contains("byte offset 1"));
  CHECK_THROWS_WITH(t.Decode({0, 99}), Contains("id 99 is out of range (vocab_size 7)"));
  CHECK_THROWS_WITH(t.Decode({-1}), Contains("id -1 is out of range"));
  CHECK_THROWS_WITH(t.IdToPiece(7), Contains("out of range"));
}

TEST_CASE("huge inputs do not hang", "[tokenizer][shared]") {
  PC_REQUIRE_SHARED();
  auto neox = pc::LoadTokenizer(pc::test::SharedPath("tokenizers/gpt-neox-20b"));
  auto start = std::chrono::steady_clock::now();
  std::string word(1 << 20, 'x');  // one 1 MB word: the heap keeps BPE O(n log n)
  CHECK(neox->Decode(neox->Encode(word)) == word);
  std::string spaces(1 << 20, ' ');
  CHECK(neox->Decode(neox->Encode(spaces)) == spaces);
  std::string mixed;
  for (int i = 0; i < 200000; ++i) mixed += static_cast<char>('a' + (i * 7919) % 26);
  CHECK(neox->Decode(neox->Encode(mixed)) == mixed);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(seconds < 30);  // about 1 s in a release build
}

namespace {
// Protobuf wire format, enough to write a small sentencepiece ModelProto.
std::string Varint(uint64_t v) {
  std::string s;
  while (v >= 0x80) s += static_cast<char>((v & 0x7F) | 0x80), v >>= 7;
  return s + static_cast<char>(v);
}
std::string Field(int field, const std::string& bytes) { return Varint(field << 3 | 2) + Varint(bytes.size()) + bytes; }
std::string FieldInt(int field, uint64_t v) { return Varint(field << 3) + Varint(v); }
std::string Piece(const std::string& piece, float score, int type) {
  std::string f(reinterpret_cast<const char*>(&score), 4);
  return Field(1, Field(1, piece) + Varint(2 << 3 | 5) + f + FieldInt(3, type));
}
std::string UnigramModel() {
  std::string m = Piece("<unk>", 0, 2) + Piece("<s>", 0, 3) + Piece("</s>", 0, 3) + Piece("\xE2\x96\x81", -1, 1) +
                  Piece("a", -2, 1) + Piece("b", -3, 1) + Piece("\xE2\x96\x81" "ab", -1.5f, 1);
  m += Field(2, FieldInt(3, 1));  // trainer_spec.model_type = UNIGRAM
  m += Field(3, Field(1, "identity") + FieldInt(3, 1) + FieldInt(4, 0));
  return m;
}
}  // namespace

TEST_CASE("sentencepiece models: errors, and what does not convert to tokenizer.json", "[tokenizer]") {
  std::string dir = pc::test::TempDir("sp-models");
  pc::test::WriteFileBytes(dir + "/garbage.model", "this is not a protobuf \xFF\xFF\xFF\xFF");
  CHECK_THROWS_WITH(pc::LoadTokenizer(dir + "/garbage.model"), Contains("garbage.model") &&
                                                                   Contains("not a sentencepiece model"));
  pc::test::WriteFileBytes(dir + "/empty.model", "");
  CHECK_THROWS_WITH(pc::LoadTokenizer(dir + "/empty.model"), Contains("not a sentencepiece model (no pieces)"));

  pc::test::WriteFileBytes(dir + "/unigram.model", UnigramModel());
  auto uni = pc::LoadTokenizer(dir + "/unigram.model");
  CHECK(uni->kind() == "sentencepiece-model");
  CHECK(uni->Encode("ab a") == std::vector<int32_t>{6, 3, 4});
  CHECK(uni->Decode(uni->Encode("ab a")) == "ab a");
  CHECK_THROWS_WITH(pc::TokenizerFromSentencePieceBpe(dir + "/unigram.model"),
                    Contains("cannot write a tokenizer.json") && Contains("UNIGRAM model (only BPE models convert)"));
  CHECK_THROWS_WITH(pc::SaveTokenizerJson(*uni, dir + "/out.json"), Contains("UNIGRAM"));
  // SaveTokenizerFiles writes the model and the configs, but no tokenizer.json.
  pc::SaveTokenizerFiles(*uni, dir + "/saved");
  CHECK(pc::fs::Exists(dir + "/saved/tokenizer.model"));
  CHECK_FALSE(pc::fs::Exists(dir + "/saved/tokenizer.json"));
  CHECK(pc::LoadTokenizer(dir + "/saved")->Encode("ab a") == uni->Encode("ab a"));
  // A folder whose tokenizer.json has a model type we do not read falls back to its tokenizer.model.
  pc::fs::MakeDirs(dir + "/both");
  pc::test::WriteFileBytes(dir + "/both/tokenizer.model", UnigramModel());
  pc::test::WriteFileBytes(dir + "/both/tokenizer.json", R"({"model": {"type": "Unigram", "vocab": []}})");
  CHECK(pc::LoadTokenizer(dir + "/both")->kind() == "sentencepiece-model");
  CHECK_THROWS_WITH(pc::LoadTokenizer(dir + "/both/tokenizer.json"), Contains("unsupported model type 'Unigram'"));
}
