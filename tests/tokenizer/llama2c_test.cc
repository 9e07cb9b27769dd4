// TokenizerFromLlama2c against an independent re-implementation of llama2.c's encode()/decode(),
// written from llama2.c's description: a dummy " " when the text is not empty, one lookup per
// UTF-8 character (bytes + 3 when absent), then repeatedly merge the adjacent pair whose
// concatenation has the highest score (leftmost on ties).
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "core/fs.h"
#include "model/tokenizer/libsentencepiece.h"
#include "model/tokenizer/sp_model_proto.h"
#include "model/tokenizer/tokenizer.h"
#include "tests/test_support.h"
#include "tests/tokenizer/tok_test_util.h"

using Catch::Matchers::Contains;
using Ids = std::vector<int32_t>;

namespace {

class Llama2cReference {
 public:
  Llama2cReference(const std::string& path, int vocab_size) {
    std::string data = pc::fs::ReadFile(path);
    size_t pos = 4;
    for (int i = 0; i < vocab_size; ++i) {
      float score;
      int32_t len;
      std::memcpy(&score, data.data() + pos, 4);
      std::memcpy(&len, data.data() + pos + 4, 4);
      pos += 8;
      vocab_.push_back(data.substr(pos, len));
      scores_.push_back(score);
      lookup_.emplace(vocab_.back(), i);
      pos += len;
    }
  }

  Ids Encode(const std::string& text) const {
    Ids tokens;
    if (!text.empty()) tokens.push_back(Find(" "));
    std::string buffer;
    for (size_t i = 0; i < text.size(); ++i) {
      auto c = static_cast<unsigned char>(text[i]);
      if ((c & 0xC0) != 0x80) buffer.clear();
      buffer += static_cast<char>(c);
      bool next_continues = i + 1 < text.size() && (static_cast<unsigned char>(text[i + 1]) & 0xC0) == 0x80;
      if (next_continues && buffer.size() < 4) continue;
      int id = Find(buffer);
      if (id >= 0) {
        tokens.push_back(id);
      } else {
        for (unsigned char b : buffer) tokens.push_back(b + 3);
      }
      buffer.clear();
    }
    while (true) {
      float best_score = -1e10f;
      int best_id = -1, best_idx = -1;
      for (size_t i = 0; i + 1 < tokens.size(); ++i) {
        int id = Find(vocab_[tokens[i]] + vocab_[tokens[i + 1]]);
        if (id != -1 && scores_[id] > best_score) {
          best_score = scores_[id];
          best_id = id;
          best_idx = static_cast<int>(i);
        }
      }
      if (best_idx == -1) break;
      tokens[best_idx] = best_id;
      tokens.erase(tokens.begin() + best_idx + 1);
    }
    return tokens;
  }

  // The text llama2.c prints for BOS followed by `ids` (raw bytes).
  std::string Decode(const Ids& ids) const {
    std::string out;
    int prev = 1;
    for (int32_t id : ids) {
      std::string piece = vocab_[id];
      if (prev == 1 && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);
      unsigned int byte;
      if (piece.size() == 6 && std::sscanf(piece.c_str(), "<0x%02X>", &byte) == 1) piece = std::string(1, static_cast<char>(byte));
      out += piece;
      prev = id;
    }
    return out;
  }

 private:
  int Find(const std::string& s) const {
    auto it = lookup_.find(s);
    return it == lookup_.end() ? -1 : it->second;
  }
  std::vector<std::string> vocab_;
  std::vector<float> scores_;
  std::unordered_map<std::string, int> lookup_;
};

// Deterministic TinyStories-like sentences.
std::vector<std::string> StoryTexts(int n) {
  const char* words[] = {"Once", "upon", "a", "time", "there", "was", "little", "girl", "named", "Lily", "she",
                         "liked", "to", "play", "with", "her", "big", "red", "ball", "in", "the", "park", "One",
                         "day", "saw", "dog", "Tom", "said", "happy", "sad", "mom", "went", "home", "and", "they",
                         "were", "friends", "forever", "tree", "sun", "jumped", "ran", "fast", "slowly", "because",
                         "wanted", "share", "toys", "don't", "can't", "it's", "I'm", "2", "3", "10", "café", "naïve"};
  const char* punct[] = {".", ",", "!", "?", "\"", ".\n", ". ", "  "};
  std::vector<std::string> texts;
  uint32_t state = 12345;
  auto next = [&] { return state = state * 1664525u + 1013904223u; };
  for (int i = 0; i < n; ++i) {
    std::string t;
    int len = 3 + static_cast<int>(next() % 20);
    for (int w = 0; w < len; ++w) {
      if (w > 0) t += ' ';
      t += words[next() % (sizeof(words) / sizeof(words[0]))];
      if (next() % 5 == 0) t += punct[next() % (sizeof(punct) / sizeof(punct[0]))];
    }
    texts.push_back(t);
  }
  return texts;
}

std::vector<std::string> AllTexts(int wiki_lines) {
  std::vector<std::string> texts = pc::test::TrickyTexts();
  for (const auto& t : StoryTexts(300)) texts.push_back(t);
  for (const auto& t : pc::test::WikiTextLines(wiki_lines)) texts.push_back(t);
  texts.push_back("Unicode: \xE2\x82\xAC \xE2\x84\xA2 \xC3\xA2 \xF0\x9F\x90\xB1 \xE4\xBD\xA0\xE5\xA5\xBD \xD7\xA9\xD7\x9C\xD7\x95\xD7\x9D");
  texts.push_back("   leading and trailing spaces   ");
  texts.push_back("\n\nnewlines\n\n");
  return texts;
}

// A literal "▁" (U+2581) in the text: llama2.c's pieces hold " " instead, so llama2.c encodes it as
// three bytes, while the tokenizer.json form (like sentencepiece and Hugging Face) reads it as a
// space. The one documented difference; such texts are compared separately.
bool HasMetaspace(const std::string& text) { return text.find("\xE2\x96\x81") != std::string::npos; }

void CompareWithReference(const pc::Tokenizer& tok, const Llama2cReference& ref, const std::vector<std::string>& texts) {
  int same = 0, compared = 0;
  for (const std::string& text : texts) {
    if (HasMetaspace(text)) continue;
    ++compared;
    Ids expected = ref.Encode(text);
    Ids got = tok.Encode(text);
    if (got == expected) {
      ++same;
    } else {
      FAIL_CHECK("text '" << text << "'\n  llama2.c" << pc::test::IdsString(expected) << "\n  ours    "
                          << pc::test::IdsString(got));
    }
    Ids with_bos = tok.EncodeWithSpecial(text);
    REQUIRE(!with_bos.empty());
    CHECK(with_bos[0] == 1);
    CHECK(tok.Decode(with_bos) == ref.Decode(expected));
    CHECK(tok.Decode(with_bos) == text);
  }
  CHECK(same == compared);
  CHECK(compared > 500);
}

}  // namespace

TEST_CASE("llama2.c tok512.bin: Encode equals llama2.c's encode()", "[tokenizer][shared]") {
  PC_REQUIRE_SHARED();
  std::string path = pc::test::SharedPath("models/stories260K/tok512.bin");
  auto tok = pc::TokenizerFromLlama2c(path, 512);
  CHECK(tok->kind() == "bpe-sentencepiece");
  CHECK(tok->vocab_size() == 512);
  CHECK(tok->bos_id() == 1);
  CHECK(tok->eos_id() == 2);
  CHECK(tok->unk_id() == 0);
  CHECK(tok->prefix_ids() == Ids{1});
  CHECK(tok->IdToPiece(3) == "<0x00>");
  CHECK(tok->IdToPiece(410) == "\xE2\x96\x81");  // llama2.c's " " is sentencepiece's "▁"
  CHECK(tok->Encode("").empty());
  Llama2cReference ref(path, 512);
  CompareWithReference(*tok, ref, AllTexts(400));
  CHECK(pc::TokenizerFromLlama2c(path)->vocab_size() == 512);  // size from the file
  // The documented difference: "▁" typed in the text is a space here, three bytes in llama2.c.
  CHECK(tok->Encode("\xE2\x96\x81" "a") == tok->Encode(" a"));
  CHECK(ref.Encode("\xE2\x96\x81" "a") != tok->Encode(" a"));
}

TEST_CASE("llama2.c export of the 32000-piece Llama vocabulary: Encode equals llama2.c", "[tokenizer][shared]") {
  PC_REQUIRE_SHARED();
  // Write the file as llama2.c's tokenizer.py exports tokenizer.model.
  auto info = pc::tok::ParseSpModelProto(pc::fs::ReadFile(pc::test::SharedPath("tokenizers/llama-spm/tokenizer.model")), "m");
  std::string body;
  int32_t max_len = 0;
  for (size_t i = 0; i < info.pieces.size(); ++i) {
    std::string t = i == 1 ? "\n<s>\n" : i == 2 ? "\n</s>\n" : info.pieces[i].piece;
    for (size_t p = t.find("\xE2\x96\x81"); p != std::string::npos; p = t.find("\xE2\x96\x81")) t.replace(p, 3, " ");
    float score = info.pieces[i].score;
    auto len = static_cast<int32_t>(t.size());
    max_len = std::max(max_len, len);
    body.append(reinterpret_cast<const char*>(&score), 4).append(reinterpret_cast<const char*>(&len), 4).append(t);
  }
  std::string path = pc::test::TempDir("llama2c") + "/tokenizer.bin";
  pc::test::WriteFileBytes(path, std::string(reinterpret_cast<const char*>(&max_len), 4) + body);
  auto tok = pc::TokenizerFromLlama2c(path, 32000);
  CHECK(tok->vocab_size() == 32000);
  Llama2cReference ref(path, 32000);
  CompareWithReference(*tok, ref, AllTexts(250));
  // And llama2.c's tokenization is the sentencepiece model's (through libsentencepiece) on these texts.
  auto sp = pc::LoadSentencePieceModel(pc::test::SharedPath("tokenizers/llama-spm/tokenizer.model"));
  for (const std::string& text : AllTexts(50)) CHECK(tok->Encode(text) == sp->Encode(text));
}

TEST_CASE("llama2.c tokenizer file errors", "[tokenizer]") {
  std::string dir = pc::test::TempDir("llama2c-errors");
  CHECK_THROWS_WITH(pc::TokenizerFromLlama2c(dir + "/none.bin", 512), Contains("does not exist"));
  auto entry = [](const std::string& s) {
    float score = 0;
    auto len = static_cast<int32_t>(s.size());
    return std::string(reinterpret_cast<const char*>(&score), 4) + std::string(reinterpret_cast<const char*>(&len), 4) + s;
  };
  int32_t max_len = 7;
  std::string header(reinterpret_cast<const char*>(&max_len), 4);
  std::string good = header + entry("<unk>") + entry("\n<s>\n") + entry("\n</s>\n");
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    good += entry(name);
  }
  good += entry(" ") + entry("a") + entry(" a");
  pc::test::WriteFileBytes(dir + "/good.bin", good);
  auto tok = pc::TokenizerFromLlama2c(dir + "/good.bin", 262);
  CHECK(tok->Encode("a a") == Ids{261, 261});
  CHECK_THROWS_WITH(pc::TokenizerFromLlama2c(dir + "/good.bin", 300), Contains("truncated") && Contains("entry 262"));
  CHECK_THROWS_WITH(pc::TokenizerFromLlama2c(dir + "/good.bin", 261), Contains("bytes after the 261 entries"));
  pc::test::WriteFileBytes(dir + "/swapped.bin", header + entry("<s>") + good.substr(4 + 13));
  CHECK_THROWS_WITH(pc::TokenizerFromLlama2c(dir + "/swapped.bin"), Contains("ids 0, 1, 2 must be"));
  std::string no_bytes = header + entry("<unk>") + entry("\n<s>\n") + entry("\n</s>\n");
  for (int i = 0; i < 260; ++i) no_bytes += entry(std::string(1, static_cast<char>('A' + i % 26)) + std::to_string(i));
  pc::test::WriteFileBytes(dir + "/nobytes.bin", no_bytes);
  CHECK_THROWS_WITH(pc::TokenizerFromLlama2c(dir + "/nobytes.bin"), Contains("expected the byte token <0x00>"));
  pc::test::WriteFileBytes(dir + "/dup.bin", good + entry("a"));
  CHECK_THROWS_WITH(pc::TokenizerFromLlama2c(dir + "/dup.bin"), Contains("duplicate piece 'a'"));
}
