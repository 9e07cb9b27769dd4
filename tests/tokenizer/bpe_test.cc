// The BPE model and tokenizer.json loading on small hand-made files: merge order, unknown
// characters, options, and every error path (with its message).
#include <catch2/catch.hpp>


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
  CHECK_THROWS_WITH(pc::LoadTokenizer(dir), Contains("neither tokenizer.json, tokenizer.model nor vocab.json + merges.txt"));

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
  // They finish (no timeout); their speed is measured by bench/tokenizer/tokenizer_bench.
  std::string word(1 << 20, 'x');  // one 1 MB word: the heap keeps BPE O(n log n)
  CHECK(neox->Decode(neox->Encode(word)) == word);
  std::string spaces(1 << 20, ' ');
  CHECK(neox->Decode(neox->Encode(spaces)) == spaces);
  std::string mixed;
  for (int i = 0; i < 200000; ++i) mixed += static_cast<char>('a' + (i * 7919) % 26);
  CHECK(neox->Decode(neox->Encode(mixed)) == mixed);
}

TEST_CASE("sentencepiece tokenizer.model read natively: a small BPE model", "[tokenizer]") {
  using pc::test::ProtoBytes;
  using pc::test::ProtoInt;
  std::string dir = pc::test::TempDir("sp-native");
  pc::test::WriteFileBytes(dir + "/bpe.model", pc::test::SpSmallModel(2));
  auto tok = pc::LoadTokenizer(dir + "/bpe.model");
  CHECK(tok->kind() == "bpe-sentencepiece");
  CHECK(tok->vocab_size() == 9);
  CHECK(tok->unk_id() == 0);
  CHECK(tok->bos_id() == 1);
  CHECK(tok->eos_id() == 2);
  CHECK(tok->prefix_ids() == Ids{1});
  CHECK(tok->sentencepiece_model() == pc::test::SpSmallModel(2));
  CHECK(tok->Encode("ab a") == Ids{8, 6});
  CHECK(tok->Encode("ab c") == Ids{8, 3, 0});  // "c" is no piece and there is no byte fallback
  CHECK(tok->Decode({8, 6}) == "ab a");
  CHECK(tok->IsSpecial(1));
  CHECK_FALSE(tok->IsSpecial(8));
  // The same through a folder (no tokenizer.json) and through TokenizerFromSentencePieceBpe.
  pc::fs::MakeDirs(dir + "/folder");
  pc::test::WriteFileBytes(dir + "/folder/tokenizer.model", pc::test::SpSmallModel(2));
  CHECK(pc::LoadTokenizer(dir + "/folder")->Encode("ab a b") == tok->Encode("ab a b"));
  CHECK(pc::TokenizerFromSentencePieceBpe(dir + "/bpe.model")->Encode("ab a b") == tok->Encode("ab a b"));
  // SaveTokenizerFiles writes tokenizer.json and the original tokenizer.model bytes.
  pc::SaveTokenizerFiles(*tok, dir + "/saved");
  CHECK(pc::fs::ReadFile(dir + "/saved/tokenizer.model") == pc::test::SpSmallModel(2));
  CHECK(pc::fs::Exists(dir + "/saved/tokenizer.json"));
  auto saved = pc::LoadTokenizer(dir + "/saved");
  CHECK(saved->Encode("ab a b") == tok->Encode("ab a b"));
  CHECK(saved->eos_id() == 2);

  // Special pieces as sentencepiece finds them: by the names trainer_spec gives, CONTROL pieces only.
  std::string named = pc::test::SpPieceProto("<unk>", 0, 2) + pc::test::SpPieceProto("<eos>", 0, 3) +
                      pc::test::SpPieceProto("<bos>", 0, 3) + pc::test::SpPieceProto("a", -1, 1) +
                      ProtoBytes(2, ProtoInt(3, 2) + ProtoInt(41, 2) + ProtoInt(42, 1) + ProtoBytes(46, "<bos>") +
                                        ProtoBytes(47, "<eos>")) +
                      pc::test::SpNormalizerProto();
  pc::test::WriteFileBytes(dir + "/named.model", named);
  auto t = pc::LoadTokenizer(dir + "/named.model");
  CHECK(t->bos_id() == 2);
  CHECK(t->eos_id() == 1);
  CHECK(t->prefix_ids() == Ids{2});
  // No bos (trainer_spec.bos_id -1 and no <s>) and an eos piece that is not CONTROL: both -1.
  std::string plain = pc::test::SpPieceProto("<unk>", 0, 2) + pc::test::SpPieceProto("</s>", 0, 1) +
                      pc::test::SpPieceProto("a", -1, 1) + ProtoBytes(2, ProtoInt(3, 2) + ProtoInt(41, -1)) +
                      pc::test::SpNormalizerProto();
  pc::test::WriteFileBytes(dir + "/plain.model", plain);
  t = pc::LoadTokenizer(dir + "/plain.model");
  CHECK(t->bos_id() == -1);
  CHECK(t->eos_id() == -1);  // (a warning: trainer_spec.eos_id is 2 by default)
  CHECK(t->unk_id() == 0);
  CHECK(t->prefix_ids().empty());
  CHECK(t->Encode("a") == Ids{0, 2});  // "▁" is no piece: unk, then "a"
}

TEST_CASE("sentencepiece models: errors, and what does not convert", "[tokenizer]") {
  using pc::test::ProtoBytes;
  using pc::test::ProtoInt;
  std::string dir = pc::test::TempDir("sp-models");
  pc::test::WriteFileBytes(dir + "/garbage.model", "this is not a protobuf \xFF\xFF\xFF\xFF");
  CHECK_THROWS_WITH(pc::LoadTokenizer(dir + "/garbage.model"), Contains("garbage.model") &&
                                                                   Contains("not a sentencepiece model"));
  pc::test::WriteFileBytes(dir + "/empty.model", "");
  CHECK_THROWS_WITH(pc::LoadTokenizer(dir + "/empty.model"), Contains("not a sentencepiece model (no pieces)"));
  CHECK_THROWS_WITH(pc::TokenizerFromSentencePieceBpe(dir + "/none.model"),
                    Contains("sentencepiece model '" + dir + "/none.model' does not exist"));
  pc::test::WriteFileBytes(dir + "/truncated.model", pc::test::SpSmallModel(2).substr(0, 25));
  CHECK_THROWS_WITH(pc::LoadTokenizer(dir + "/truncated.model"), Contains("malformed protobuf at byte") &&
                                                                     Contains("truncated"));
  // What libsentencepiece refuses at load.
  std::string normalizer = pc::test::SpNormalizerProto(), bpe = ProtoBytes(2, ProtoInt(3, 2));
  pc::test::WriteFileBytes(dir + "/nounk.model", pc::test::SpPieceProto("a", 0, 1) + bpe + normalizer);
  CHECK_THROWS_WITH(pc::LoadTokenizer(dir + "/nounk.model"), Contains("nounk.model: no piece has type UNKNOWN"));
  pc::test::WriteFileBytes(dir + "/twounk.model", pc::test::SpPieceProto("<unk>", 0, 2) +
                                                      pc::test::SpPieceProto("<unk2>", 0, 2) + bpe + normalizer);
  CHECK_THROWS_WITH(pc::LoadTokenizer(dir + "/twounk.model"), Contains("pieces 0 and 1 are both UNKNOWN"));
  pc::test::WriteFileBytes(dir + "/emptypiece.model", pc::test::SpPieceProto("<unk>", 0, 2) +
                                                          pc::test::SpPieceProto("", 0, 1) + bpe + normalizer);
  CHECK_THROWS_WITH(pc::LoadTokenizer(dir + "/emptypiece.model"), Contains("piece 1 is empty"));

  // Models without a tokenizer.json form: a clear error naming the file and why.
  auto unsupported = [&](const std::string& name, const std::string& bytes, const std::string& why) {
    pc::test::WriteFileBytes(dir + "/" + name, bytes);
    CHECK_THROWS_WITH(pc::LoadTokenizer(dir + "/" + name),
                      Contains(dir + "/" + name + ": unsupported sentencepiece model: ") && Contains(why) &&
                          Contains("libsentencepiece cannot be loaded beside LibTorch"));
  };
  unsupported("unigram.model", pc::test::SpSmallModel(1),
              "it is a sentencepiece UNIGRAM model (only BPE models convert)");
  unsupported("nfkc.model", pc::test::SpSmallModel(2, "", pc::test::SpNormalizerProto("nmt_nfkc")),
              "normalizer 'nmt_nfkc' has no tokenizer.json equivalent");
  unsupported("suffix.model", pc::test::SpSmallModel(2, ProtoInt(24, 1)), "treat_whitespace_as_suffix=false");
  unsupported("extra-ws.model", pc::test::SpSmallModel(2, "", ProtoBytes(3, ProtoBytes(1, "identity"))),
              "remove_extra_whitespaces=false");
  CHECK_THROWS_WITH(pc::TokenizerFromSentencePieceBpe(dir + "/unigram.model"), Contains("UNIGRAM"));
  // A folder whose tokenizer.json has a model type we do not read falls back to its tokenizer.model,
  // which fails the same way when it is not a convertible BPE model.
  pc::fs::MakeDirs(dir + "/both");
  pc::test::WriteFileBytes(dir + "/both/tokenizer.model", pc::test::SpSmallModel(1));
  pc::test::WriteFileBytes(dir + "/both/tokenizer.json", R"({"model": {"type": "Unigram", "vocab": []}})");
  CHECK_THROWS_WITH(pc::LoadTokenizer(dir + "/both"),
                    Contains("both/tokenizer.model: unsupported sentencepiece model"));
  CHECK_THROWS_WITH(pc::LoadTokenizer(dir + "/both/tokenizer.json"), Contains("unsupported model type 'Unigram'"));
  pc::test::WriteFileBytes(dir + "/both/tokenizer.model", pc::test::SpSmallModel(2));
  CHECK(pc::LoadTokenizer(dir + "/both")->Encode("ab a") == Ids{8, 6});
}
