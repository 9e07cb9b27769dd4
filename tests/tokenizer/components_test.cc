// The tokenizer.json components one by one: normalizers, pre-tokenizers, decoders, added tokens,
// post-processors, UTF-8 helpers.
#include <catch2/catch.hpp>

#include "model/tokenizer/added_vocab.h"
#include "model/tokenizer/decoder.h"
#include "model/tokenizer/normalizer.h"
#include "model/tokenizer/post_processor.h"
#include "model/tokenizer/pre_tokenizer.h"
#include "model/tokenizer/regex.h"
#include "model/tokenizer/utf8.h"

using Catch::Matchers::Contains;
using nlohmann::json;
namespace tok = pc::tok;

namespace {
const std::string kMeta = "\xE2\x96\x81";  // "▁"

std::string Normalize(const json& spec, std::string text) {
  tok::MakeNormalizer(spec, "test")->Normalize(&text);
  return text;
}

std::vector<std::string> PreTokenize(const json& spec, const std::string& text) {
  tok::Pieces pieces{tok::Piece{text, -1, true}};
  tok::MakePreTokenizer(spec, "test")->Apply(&pieces);
  std::vector<std::string> out;
  for (const auto& p : pieces) out.push_back(p.text);
  return out;
}

std::string DecodeTokens(const json& spec, std::vector<std::string> tokens) {
  tok::MakeDecoder(spec, "test")->DecodeChain(&tokens);
  std::string out;
  for (const auto& t : tokens) out += t;
  return out;
}

json SplitSpec(const std::string& behavior, bool invert = false) {
  return {{"type", "Split"}, {"pattern", {{"String", "-"}}}, {"behavior", behavior}, {"invert", invert}};
}
}  // namespace

TEST_CASE("UTF-8 lossy conversion replaces maximal invalid subparts", "[tokenizer]") {
  const std::string r = "\xEF\xBF\xBD";
  CHECK(tok::Utf8Lossy("plain caf\xC3\xA9 \xF0\x9F\x98\x80") == "plain caf\xC3\xA9 \xF0\x9F\x98\x80");
  CHECK(tok::Utf8Lossy("a\xFF" "b") == "a" + r + "b");
  CHECK(tok::Utf8Lossy("a\xE2\x96") == "a" + r);              // truncated: one replacement
  CHECK(tok::Utf8Lossy("\xED\xA0\x80") == r + r + r);          // surrogate: three
  CHECK(tok::Utf8Lossy("\xC0\xAF") == r + r);                  // overlong
  CHECK(tok::Utf8Lossy("\xF0\x9F\x98" "x") == r + "x");
}

TEST_CASE("GPT-2 byte-level alphabet", "[tokenizer]") {
  const auto& a = tok::ByteLevelAlphabet::Get();
  CHECK(a.Encode(' ') == "\xC4\xA0");   // Ġ U+0120
  CHECK(a.Encode('\n') == "\xC4\x8A");  // Ċ U+010A
  CHECK(a.Encode('a') == "a");
  CHECK(a.Encode(0xAD) == "\xC5\x83");  // Ń U+0143, the last remapped byte
  for (int b = 0; b < 256; ++b) CHECK(a.Decode(a.CodePoint(static_cast<uint8_t>(b))) == b);
  CHECK(a.Decode('A' + 1000) == -1);
}

TEST_CASE("normalizers", "[tokenizer]") {
  json llama = {{"type", "Sequence"},
                {"normalizers",
                 {{{"type", "Prepend"}, {"prepend", kMeta}},
                  {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", kMeta}}}}};
  CHECK(Normalize(llama, "Hello  world") == kMeta + "Hello" + kMeta + kMeta + "world");
  CHECK(Normalize(llama, "").empty());  // Prepend leaves an empty string empty, as HF
  CHECK(Normalize({{"type", "NFC"}}, "cafe\xCC\x81") == "caf\xC3\xA9");
  CHECK(Normalize({{"type", "NFD"}}, "caf\xC3\xA9") == "cafe\xCC\x81");
  CHECK(Normalize({{"type", "NFKC"}}, "\xEF\xAC\x81") == "fi");  // ligature fi
  CHECK(Normalize({{"type", "NFC"}}, "ascii stays") == "ascii stays");
  CHECK(Normalize({{"type", "Lowercase"}}, "\xC3\x80" "BC") == "\xC3\xA0" "bc");
  CHECK(Normalize({{"type", "Strip"}, {"strip_left", true}, {"strip_right", false}}, " \t x ") == "x ");
  CHECK(Normalize({{"type", "Replace"}, {"pattern", {{"Regex", "\\s+"}}}, {"content", " "}}, "a \t\n b") == "a b");
  CHECK(tok::MakeNormalizer(nullptr, "test") == nullptr);
  CHECK_THROWS_WITH(tok::MakeNormalizer({{"type", "BertNormalizer"}}, "tokenizer.json: normalizer"),
                    Contains("unsupported normalizer type 'BertNormalizer'") && Contains("supported: NFC"));
  CHECK_THROWS_WITH(tok::MakeNormalizer({{"type", "Replace"}, {"pattern", {{"Regex", "("}}}, {"content", ""}}, "n"),
                    Contains("invalid regular expression '('"));
  CHECK_THROWS_WITH(tok::MakeNormalizer({{"no_type", 1}}, "n"), Contains("missing string member \"type\""));
}

TEST_CASE("Unicode normalization uses Unicode 9.0 as Hugging Face tokenizers", "[tokenizer]") {
  // U+0301 (class 230) then U+0316 (220, Unicode 1.1): reordered. U+0301 then U+1DFA (218, Unicode
  // 14.0): unchanged, as HF's Unicode 9.0 tables leave marks they do not know (ICU 72 would reorder).
  CHECK(Normalize({{"type", "NFD"}}, "a\xCC\x81\xCC\x96") == "a\xCC\x96\xCC\x81");
  CHECK(Normalize({{"type", "NFD"}}, "a\xCC\x81\xE1\xB7\xBA") == "a\xCC\x81\xE1\xB7\xBA");
  // NFC: U+1DFA between e and U+0301 is a starter to HF, so e and U+0301 do not compose.
  CHECK(Normalize({{"type", "NFC"}}, "e\xE1\xB7\xBA\xCC\x81") == "e\xE1\xB7\xBA\xCC\x81");
  CHECK(Normalize({{"type", "NFD"}}, "x\xCC\x81\xE1\xB7\xBA\xCC\x96") == "x\xCC\x81\xE1\xB7\xBA\xCC\x96");
  // U+11938 (Unicode 13.0) has a canonical decomposition that HF does not apply.
  CHECK(Normalize({{"type", "NFD"}}, "\xF0\x91\xA4\xB8") == "\xF0\x91\xA4\xB8");
  // U+1E0A (Unicode 1.1) decomposes; U+AC00 (Hangul, 2.0) too.
  CHECK(Normalize({{"type", "NFD"}}, "\xE1\xB8\x8A") == "D\xCC\x87");
  CHECK(Normalize({{"type", "NFD"}}, "\xEA\xB0\x80") == "\xE1\x84\x80\xE1\x85\xA1");
}

TEST_CASE("split behaviours follow Hugging Face", "[tokenizer]") {
  using V = std::vector<std::string>;
  CHECK(PreTokenize(SplitSpec("Removed"), "the-final--countdown") == V{"the", "final", "countdown"});
  CHECK(PreTokenize(SplitSpec("Isolated"), "the-final--countdown") == V{"the", "-", "final", "-", "-", "countdown"});
  CHECK(PreTokenize(SplitSpec("MergedWithPrevious"), "the-final--countdown") == V{"the-", "final-", "-", "countdown"});
  CHECK(PreTokenize(SplitSpec("MergedWithNext"), "the-final--countdown") == V{"the", "-final", "-", "-countdown"});
  CHECK(PreTokenize(SplitSpec("Contiguous"), "the-final--countdown") == V{"the", "-", "final", "--", "countdown"});
  CHECK(PreTokenize(SplitSpec("Removed", true), "the-final--countdown") == V{"-", "-", "-"});
  CHECK_THROWS_WITH(PreTokenize(SplitSpec("Sideways"), "x"), Contains("unsupported split behavior type 'Sideways'"));
}

TEST_CASE("pre-tokenizers", "[tokenizer]") {
  using V = std::vector<std::string>;
  json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  CHECK(PreTokenize(byte_level, "Hello world's  3x") ==
        V{"Hello", "\xC4\xA0world", "'s", "\xC4\xA0", "\xC4\xA0" "3", "x"});
  byte_level["add_prefix_space"] = true;
  CHECK(PreTokenize(byte_level, "Hi") == V{"\xC4\xA0Hi"});
  byte_level["use_regex"] = false;
  CHECK(PreTokenize(byte_level, "a b") == V{"\xC4\xA0" "a\xC4\xA0" "b"});

  json metaspace = {{"type", "Metaspace"}, {"replacement", kMeta}, {"prepend_scheme", "always"}, {"split", true}};
  CHECK(PreTokenize(metaspace, "Hey friend") == V{kMeta + "Hey", kMeta + "friend"});
  CHECK(PreTokenize(metaspace, "  x") == V{kMeta, kMeta + "x"});
  metaspace["split"] = false;
  CHECK(PreTokenize(metaspace, "Hey friend") == V{kMeta + "Hey" + kMeta + "friend"});

  // Llama-3 style: Split with the GPT-4 style regex, then ByteLevel without its own regex.
  json seq = {{"type", "Sequence"},
              {"pretokenizers",
               {{{"type", "Split"}, {"pattern", {{"Regex", "\\p{N}{1,3}| ?\\p{L}+|\\s+"}}}, {"behavior", "Isolated"}, {"invert", false}},
                {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}};
  CHECK(PreTokenize(seq, "abc 12345") == V{"abc", "\xC4\xA0", "123", "45"});
  CHECK(PreTokenize({{"type", "Digits"}, {"individual_digits", true}}, "a123") == V{"a", "1", "2", "3"});
  CHECK(PreTokenize({{"type", "Digits"}, {"individual_digits", false}}, "a123b") == V{"a", "123", "b"});
  CHECK(PreTokenize({{"type", "Whitespace"}}, "Hi, you!") == V{"Hi", ",", "you", "!"});
  CHECK(PreTokenize({{"type", "WhitespaceSplit"}}, " Hi,  you! ") == V{"Hi,", "you!"});
  CHECK_THROWS_WITH(tok::MakePreTokenizer({{"type", "BertPreTokenizer"}}, "tokenizer.json: pre_tokenizer"),
                    Contains("unsupported pre_tokenizer type 'BertPreTokenizer'") && Contains("ByteLevel"));
}

TEST_CASE("decoders", "[tokenizer]") {
  json llama = {{"type", "Sequence"},
                {"decoders",
                 {{{"type", "Replace"}, {"pattern", {{"String", kMeta}}}, {"content", " "}},
                  {{"type", "ByteFallback"}},
                  {{"type", "Fuse"}},
                  {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}};
  CHECK(DecodeTokens(llama, {kMeta + "Hello", kMeta, "<0xE2>", "<0x96>", "<0x81>", "x"}) == "Hello \xE2\x96\x81x");
  CHECK(DecodeTokens(llama, {"<0xE2>", "<0x96>", "x"}) == "\xEF\xBF\xBD\xEF\xBF\xBDx");  // one U+FFFD per byte
  CHECK(DecodeTokens(llama, {kMeta + kMeta + "a"}) == " a");  // Strip removes one space only
  json metaspace = {{"type", "Metaspace"}, {"replacement", kMeta}, {"prepend_scheme", "always"}};
  CHECK(DecodeTokens(metaspace, {kMeta + "Hey", kMeta + "you"}) == "Hey you");
  json byte_level = {{"type", "ByteLevel"}};
  CHECK(DecodeTokens(byte_level, {"Hello", "\xC4\xA0world", "  "}) == "Hello world  ");  // "  " is not byte-level: kept
  CHECK(DecodeTokens(byte_level, {"\xC3\xA2"}) == "\xEF\xBF\xBD");  // the lone byte 0xE2
  CHECK_THROWS_WITH(tok::MakeDecoder({{"type", "WordPiece"}}, "tokenizer.json: decoder"),
                    Contains("unsupported decoder type 'WordPiece'") && Contains("ByteFallback"));
}

TEST_CASE("added tokens: leftmost-longest, lstrip, rstrip, single_word, normalized", "[tokenizer]") {
  auto split = [](std::vector<tok::AddedToken> tokens, const std::string& text, const tok::Normalizer* n = nullptr) {
    tok::AddedVocabulary v(std::move(tokens), n);
    std::vector<std::string> out;
    for (const auto& p : v.SplitAndNormalize(text, n)) out.push_back(p.id >= 0 ? "[" + p.text + "]" : p.text);
    return out;
  };
  using V = std::vector<std::string>;
  tok::AddedToken mask{"<mask>", 5};
  CHECK(split({mask}, "a <mask> b") == V{"a ", "[<mask>]", " b"});
  tok::AddedToken l = mask;
  l.lstrip = true;
  CHECK(split({l}, "a  <mask> b") == V{"a", "[<mask>]", " b"});
  tok::AddedToken r = mask;
  r.rstrip = true;
  CHECK(split({r}, "a <mask>  b") == V{"a ", "[<mask>]", "b"});
  tok::AddedToken w{"ab", 6};
  w.single_word = true;
  CHECK(split({w}, "xab ab abc") == V{"xab ", "[ab]", " abc"});
  tok::AddedToken s1{"  ", 7}, s2{"   ", 8};  // longest match wins
  CHECK(split({s1, s2}, "a    b") == V{"a", "[   ]", " b"});
  CHECK(split({mask}, "").empty());
  auto nfc = tok::MakeNormalizer({{"type", "NFC"}}, "n");
  tok::AddedToken cafe{"caf\xC3\xA9", 9};
  cafe.normalized = true;
  CHECK(split({cafe}, "un cafe\xCC\x81!", nfc.get()) == V{"un ", "[caf\xC3\xA9]", "!"});
}

TEST_CASE("post-processors give the ids around one sequence", "[tokenizer]") {
  auto lookup = [](const std::string& s) { return s == "<s>" ? 1 : s == "</s>" ? 2 : -1; };
  json llama = {{"type", "TemplateProcessing"},
                {"single", {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
                {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}};
  auto t = tok::ParsePostProcessor(llama, lookup, "p");
  CHECK(t.prefix == std::vector<int32_t>{1});
  CHECK(t.suffix.empty());
  json text_form = {{"type", "TemplateProcessing"}, {"single", "<s> $A </s>"}};
  t = tok::ParsePostProcessor(text_form, lookup, "p");
  CHECK(t.prefix == std::vector<int32_t>{1});
  CHECK(t.suffix == std::vector<int32_t>{2});
  t = tok::ParsePostProcessor({{"type", "RobertaProcessing"}, {"cls", {"<s>", 0}}, {"sep", {"</s>", 2}}}, lookup, "p");
  CHECK(t.prefix == std::vector<int32_t>{0});
  CHECK(t.suffix == std::vector<int32_t>{2});
  t = tok::ParsePostProcessor({{"type", "Sequence"}, {"processors", {{{"type", "ByteLevel"}}, llama}}}, lookup, "p");
  CHECK(t.prefix == std::vector<int32_t>{1});
  CHECK(tok::ParsePostProcessor({{"type", "ByteLevel"}}, lookup, "p").prefix.empty());
  CHECK_THROWS_WITH(tok::ParsePostProcessor({{"type", "TemplateProcessing"}, {"single", "<x> $A"}}, lookup, "pp"),
                    Contains("'<x>'"));
  CHECK_THROWS_WITH(tok::ParsePostProcessor({{"type", "Magic"}}, lookup, "pp"),
                    Contains("unsupported post_processor type 'Magic'"));
}

TEST_CASE("regex: Unicode classes, no empty-match loops", "[tokenizer]") {
  tok::Regex letters("\\p{L}+", "test");
  auto spans = letters.FindAll("ab \xC3\xA9t\xC3\xA9 12");
  REQUIRE(spans.size() == 2);
  CHECK(spans[1] == tok::Span{3, 8});
  tok::Regex empty("x*", "test");
  CHECK(empty.FindAll("abc").size() == 4);  // empty matches advance one character
  CHECK(empty.FindAll("").size() == 1);
  CHECK_THROWS_WITH(tok::Regex("a(b", "tokenizer.json: pre_tokenizer"),
                    Contains("tokenizer.json: pre_tokenizer") && Contains("invalid regular expression 'a(b'"));
}
