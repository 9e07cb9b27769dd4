// ByteLevelBpeTrainer: merge order and tie rule, early stop, special tokens, errors, and that the
// result saves as a tokenizer.json that LoadTokenizer reads back.
#include <catch2/catch.hpp>

#include "core/fs.h"
#include "model/tokenizer/bpe_tokenizer.h"
#include "model/tokenizer/bpe_trainer.h"
#include "tests/test_support.h"
#include "tests/tokenizer/tok_test_util.h"

using Catch::Matchers::Contains;

namespace {
pc::BpeTrainResult Train(const std::string& text, int32_t vocab_size) {
  pc::BpeTrainerOptions options;
  options.vocab_size = vocab_size;
  pc::ByteLevelBpeTrainer trainer(options);
  trainer.AddText(text);
  return trainer.Train();
}
std::vector<std::pair<int32_t, int32_t>> Merges(const pc::Tokenizer& tok) {
  return dynamic_cast<const pc::tok::BpeTokenizer&>(tok).model().merges();
}
std::string MergeText(const pc::Tokenizer& tok, size_t i) {
  auto m = Merges(tok).at(i);
  return tok.IdToPiece(m.first) + " " + tok.IdToPiece(m.second);
}
}  // namespace

TEST_CASE("BPE trainer: most frequent pair first, ties to the smaller ids", "[tokenizer]") {
  // Words: "xy", " xy", " uv" x2. Pairs seen twice: (x,y), (Ġ,u), (u,v); (Ġ,u) has the smallest ids.
  auto r = Train("xy xy uv uv", 257 + 3);
  REQUIRE(r.merges == 3);
  CHECK_FALSE(r.stopped_early);
  CHECK(MergeText(*r.tokenizer, 0) == "\xC4\xA0 u");
  CHECK(MergeText(*r.tokenizer, 1) == "x y");          // ties with the new (Ġu, v): x's id is smaller
  CHECK(MergeText(*r.tokenizer, 2) == "\xC4\xA0u v");
  CHECK(r.tokenizer->vocab_size() == 260);
  CHECK(r.words == 4);
  CHECK(r.unique_words == 3);
  // The classic example: "aaabdaaabac" merges "a a" first (count 4).
  auto classic = Train("aaabdaaabac", 257 + 1);
  CHECK(MergeText(*classic.tokenizer, 0) == "a a");
}

TEST_CASE("BPE trainer: deterministic, stops early when no pair repeats", "[tokenizer]") {
  auto a = Train("the cat sat on the mat with the hat", 300);
  auto b = Train("the cat sat on the mat with the hat", 300);
  CHECK(Merges(*a.tokenizer) == Merges(*b.tokenizer));
  CHECK(a.stopped_early);
  CHECK(a.merges > 0);
  CHECK(a.tokenizer->vocab_size() == 257 + a.merges);
  auto none = Train("ab cd", 300);
  CHECK(none.stopped_early);
  CHECK(none.merges == 0);
  CHECK(none.tokenizer->vocab_size() == 257);
}

TEST_CASE("BPE trainer: special token is bos/eos, never learned, matched when typed", "[tokenizer]") {
  std::string text;
  for (int i = 0; i < 50; ++i) text += "story number " + std::to_string(i) + " ends here.<|endoftext|>";
  auto r = Train(text, 400);
  const pc::Tokenizer& tok = *r.tokenizer;
  CHECK(tok.kind() == "bpe-bytelevel");
  CHECK(tok.bos_id() == 0);
  CHECK(tok.eos_id() == 0);
  CHECK(tok.IdToPiece(0) == "<|endoftext|>");
  CHECK(tok.prefix_ids().empty());
  for (int32_t id = 1; id < tok.vocab_size(); ++id) CHECK(tok.IdToPiece(id).find("endoftext") == std::string::npos);
  auto ids = tok.Encode("ends here.<|endoftext|>story");
  CHECK(std::count(ids.begin(), ids.end(), 0) == 1);
  CHECK(tok.Decode(ids) == "ends here.story");
  CHECK(tok.Decode(ids, false) == "ends here.<|endoftext|>story");
}

TEST_CASE("BPE trainer: option errors state the numbers", "[tokenizer]") {
  pc::BpeTrainerOptions options;
  options.vocab_size = 200;
  CHECK_THROWS_WITH(pc::ByteLevelBpeTrainer(options),
                    Contains("vocab_size 200") && Contains("256") && Contains("1 special token(s) = 257"));
  options.vocab_size = 256;
  options.special_tokens = {};
  CHECK_NOTHROW(pc::ByteLevelBpeTrainer(options));
  options.vocab_size = 1000;
  options.special_tokens = {"<a>", "<a>"};
  CHECK_THROWS_WITH(pc::ByteLevelBpeTrainer(options), Contains("'<a>' is listed twice"));
  options.special_tokens = {"x"};
  CHECK_THROWS_WITH(pc::ByteLevelBpeTrainer(options), Contains("single byte-level character"));
  options.special_tokens = {""};
  CHECK_THROWS_WITH(pc::ByteLevelBpeTrainer(options), Contains("must not be empty"));
  pc::ByteLevelBpeTrainer ok{pc::BpeTrainerOptions{}};
  CHECK_THROWS_WITH(ok.AddText("bad \xFF"), Contains("not valid UTF-8"));
}

TEST_CASE("BPE trainer on WikiText: saves, reloads, round-trips any UTF-8", "[tokenizer][shared]") {
  PC_REQUIRE_SHARED();
  std::string wiki = pc::fs::ReadFile(pc::test::SharedPath("text/wikitext-2/wiki.test.raw.txt"));
  auto r = Train(wiki, 1024);
  CHECK(r.merges == 1024 - 257);
  CHECK_FALSE(r.stopped_early);
  std::string dir = pc::test::TempDir("trained");
  pc::SaveTokenizerFiles(*r.tokenizer, dir);
  auto loaded = pc::LoadTokenizer(dir);
  CHECK(loaded->vocab_size() == 1024);
  CHECK(loaded->bos_id() == 0);
  CHECK(loaded->prefix_ids().empty());
  auto lines = pc::test::WikiTextLines(200);
  for (const auto& t : pc::test::TrickyTexts()) lines.push_back(t);
  for (const std::string& line : lines) {
    std::vector<int32_t> ids = r.tokenizer->Encode(line);
    CHECK(loaded->Encode(line) == ids);
    CHECK(loaded->Decode(ids) == line);  // the full byte alphabet: every UTF-8 text round-trips
  }
  std::vector<int32_t> all = loaded->Encode(wiki);
  CHECK(all.size() < wiki.size() / 2);  // it compresses
}

TEST_CASE("byte-level BPE: decode(encode(x)) == x for random UTF-8, invalid UTF-8 is refused", "[tokenizer]") {
  std::string text;
  for (uint32_t i = 0; i < 300; ++i) text += pc::test::RandomUtf8(i, 40) + " the quick brown fox\n";
  auto r = Train(text, 600);
  for (uint32_t i = 1000; i < 3000; ++i) {
    std::string x = pc::test::RandomUtf8(i, 60);
    REQUIRE(r.tokenizer->Decode(r.tokenizer->Encode(x)) == x);
  }
  CHECK_THROWS_WITH(r.tokenizer->Encode("ok \xC3"), Contains("not valid UTF-8") && Contains("byte offset 3"));
  // Decoding ids that split a character gives U+FFFD for the partial bytes, as Hugging Face does.
  std::vector<int32_t> ids = r.tokenizer->Encode("\xE4\xB8\xAD");
  std::vector<int32_t> bytes;
  for (unsigned char b : std::string("\xE4\xB8\xAD")) bytes.push_back(1 + b);  // byte tokens: id 1 + byte
  CHECK(r.tokenizer->Decode(bytes) == "\xE4\xB8\xAD");
  CHECK(r.tokenizer->Decode({bytes[0], bytes[1]}) == "\xEF\xBF\xBD");
}
