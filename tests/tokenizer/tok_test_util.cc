#include "tests/tokenizer/tok_test_util.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>
#include <sstream>

#include "core/fs.h"
#include "core/strings.h"
#include "model/tokenizer/tokenizer.h"
#include "tests/test_support.h"

namespace pc::test {

std::vector<TokenizerVector> ReadTokenizerVectors(const std::string& folder) {
  std::string inp = fs::ReadFile(fs::Join(folder, "vectors.inp"));
  std::string out = fs::ReadFile(fs::Join(folder, "vectors.out"));
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  size_t pos = 0;
  for (size_t next = inp.find(sep, pos); next != std::string::npos; next = inp.find(sep, pos)) {
    texts.push_back(inp.substr(pos, next - pos));
    pos = next + sep.size();
  }
  std::vector<std::string> lines = Split(out, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  std::vector<TokenizerVector> vectors;
  for (size_t i = 0; i < texts.size(); ++i) {
    TokenizerVector v;
    v.text = texts[i];
    if (i < lines.size()) {
      for (const std::string& part : Split(lines[i], ' ')) {
        if (!part.empty()) v.ids.push_back(static_cast<int32_t>(ParseInt(part, "vectors.out")));
      }
    }
    vectors.push_back(std::move(v));
  }
  return vectors;
}

void WriteFileBytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f << bytes;
}

std::string IdsString(const std::vector<int32_t>& ids) {
  std::ostringstream os;
  for (int32_t id : ids) os << ' ' << id;
  return os.str();
}

std::vector<std::string> WikiTextLines(size_t max_lines) {
  std::string path = SharedPath("text/wikitext-2/wiki.test.raw.txt");
  if (path.empty() || !fs::Exists(path)) return {};
  std::vector<std::string> lines;
  for (const std::string& line : Split(fs::ReadFile(path), '\n')) {
    if (Trim(line).empty()) continue;
    lines.push_back(line);
    if (lines.size() >= max_lines) break;
  }
  return lines;
}

std::vector<std::string> TrickyTexts() {
  return {
      "",
      " ",
      "  ",
      "\n",
      " \n \n",
      "\t\tx",
      "Hello world",
      " Hello  world ",
      "Hello   world!!!  ",
      "Once upon a time, there was a little girl named Lily.",
      "She liked to play outside.\nOne day, she saw a big, red ball.",
      "It's 3.14159 or 1,000,000 -- isn't it? I'd've thought we'll see.",
      "caf\xC3\xA9 na\xC3\xAFve r\xC3\xA9sum\xC3\xA9",
      "\xE2\x96\x81" "already \xE2\x96\x81" "metaspace",
      "\xF0\x9F\x98\x80 emoji \xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD",
      "\xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82 \xD0\xBC\xD0\xB8\xD1\x80",
      "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xAE\xE3\x83\x86\xE3\x82\xAD\xE3\x82\xB9\xE3\x83\x88",
      "\xE0\xA4\xA8\xE0\xA4\xAE\xE0\xA4\xB8\xE0\xA5\x8D\xE0\xA4\xA4\xE0\xA5\x87",
      "tabs\tand\r\nwindows line ends\r\n",
      "x = [1, 2, 3]; y = {\"a\": 1} // code?",
      "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
  };
}

void CheckSameTokenizer(const Tokenizer& a, const Tokenizer& b, bool compare_special_decode) {
  CHECK(a.vocab_size() == b.vocab_size());
  CHECK(a.bos_id() == b.bos_id());
  CHECK(a.eos_id() == b.eos_id());
  CHECK(a.unk_id() == b.unk_id());
  CHECK(a.prefix_ids() == b.prefix_ids());
  for (int32_t id = 0; id < a.vocab_size(); id += 97) CHECK(a.IdToPiece(id) == b.IdToPiece(id));
  std::vector<std::string> texts = TrickyTexts();
  for (const auto& line : WikiTextLines(100)) texts.push_back(line);
  texts.push_back("special <|endoftext|> and <s> </s> <unk> typed in");
  for (const std::string& text : texts) {
    std::vector<int32_t> ids = a.Encode(text);
    CHECK(b.Encode(text) == ids);
    CHECK(b.Decode(ids) == a.Decode(ids));
    if (compare_special_decode) CHECK(b.Decode(ids, false) == a.Decode(ids, false));
  }
}

std::string ProtoVarint(uint64_t v) {
  std::string s;
  for (; v >= 0x80; v >>= 7) s += static_cast<char>((v & 0x7F) | 0x80);
  return s + static_cast<char>(v);
}

std::string ProtoBytes(int field, const std::string& bytes) {
  return ProtoVarint(static_cast<uint64_t>(field) << 3 | 2) + ProtoVarint(bytes.size()) + bytes;
}

std::string ProtoInt(int field, int64_t v) {
  return ProtoVarint(static_cast<uint64_t>(field) << 3) + ProtoVarint(static_cast<uint64_t>(v));
}

std::string SpPieceProto(const std::string& piece, float score, int type) {
  std::string f(4, '\0');
  std::memcpy(f.data(), &score, 4);
  return ProtoBytes(1, ProtoBytes(1, piece) + ProtoVarint(2 << 3 | 5) + f + ProtoInt(3, type));
}

std::string SpNormalizerProto(const std::string& name) {
  return ProtoBytes(3, ProtoBytes(1, name) + ProtoInt(3, 1) + ProtoInt(4, 0));
}

std::string SpSmallModel(int model_type, const std::string& trainer_extra, const std::string& normalizer) {
  const std::string ws = "\xE2\x96\x81";
  std::string m = SpPieceProto("<unk>", 0, 2) + SpPieceProto("<s>", 0, 3) + SpPieceProto("</s>", 0, 3) +
                  SpPieceProto(ws, -1, 1) + SpPieceProto("a", -2, 1) + SpPieceProto("b", -3, 1) +
                  SpPieceProto(ws + "a", -0.5f, 1) + SpPieceProto("ab", -1, 1) + SpPieceProto(ws + "ab", -0.2f, 1);
  return m + ProtoBytes(2, ProtoInt(3, model_type) + trainer_extra) + normalizer;
}

}  // namespace pc::test

namespace pc::test {
std::string RandomUtf8(uint32_t seed, int max_chars) {
  uint32_t state = seed * 2654435761u + 1;
  auto next = [&] { return state = state * 1664525u + 1013904223u; };
  static const uint32_t kRanges[][2] = {{0x20, 0x7E}, {0x09, 0x0D}, {0x00, 0x1F}, {0xA0, 0x24F}, {0x300, 0x36F},
                                        {0x400, 0x4FF}, {0x4E00, 0x4FFF}, {0x1F300, 0x1F64F}, {0x2000, 0x206F},
                                        {0xE000, 0xE0FF}, {0x10000, 0x1000F}};
  std::string out;
  int n = static_cast<int>(next() % (max_chars + 1));
  for (int i = 0; i < n; ++i) {
    const auto& r = kRanges[next() % (sizeof(kRanges) / sizeof(kRanges[0]))];
    uint32_t cp = r[0] + next() % (r[1] - r[0] + 1);
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  return out;
}
}  // namespace pc::test
