// llama2.c's tokenizer file -> a Llama-style sentencepiece-BPE tokenizer.json tokenizer.
//
// Why this equals llama2.c's encode(): llama2.c prepends " " (when the text is not empty), looks up
// every UTF-8 character (bytes + 3 when absent), then merges the adjacent pair whose concatenation
// has the highest score, leftmost first. The tokenizer.json form prepends "▁" and maps " " to "▁"
// (llama2.c's pieces hold " " where sentencepiece has "▁", so the vocabularies match after the same
// mapping), falls back to <0xNN> = id byte + 3, and merges pairs by rank, where the ranks list every
// (a, b) with a + b in the vocabulary by the score of a + b (sp_bpe_json.h). Lowest rank first is then
// highest score first. Differences remain only for exact score ties between different merged pieces
// (llama2.c takes the leftmost pair, ranks take the lower id; counted and logged at load), and
// for "<s>", "</s>", "<unk>" typed literally (matched as special tokens, as Hugging Face does;
// llama2.c encodes their characters).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "core/error.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/text.h"
#include "model/tokenizer/bpe_tokenizer.h"
#include "model/tokenizer/sp_bpe_json.h"
#include "model/tokenizer/tokenizer.h"

namespace pc {

namespace {
constexpr const char* kMetaspace = "\xE2\x96\x81";

struct Llama2cEntry {
  float score;
  std::string bytes;
};

std::vector<Llama2cEntry> ReadLlama2cFile(const std::string& path, int32_t vocab_size) {
  PC_CHECK(fs::Exists(path), "'", path, "' does not exist");
  std::string data = fs::ReadFile(path);
  size_t pos = 0;
  auto read = [&](void* dst, size_t n, const char* what, size_t index) {
    PC_CHECK(data.size() - pos >= n, path, ": truncated llama2.c tokenizer file: ", what, " of entry ", index,
             " at byte ", pos, " (file has ", data.size(), " bytes)");
    std::memcpy(dst, data.data() + pos, n);
    pos += n;
  };
  int32_t max_len = 0;
  read(&max_len, 4, "max_token_length", 0);
  PC_CHECK(max_len > 0 && max_len < 4096, path, ": max_token_length ", max_len, " is implausible (not a llama2.c tokenizer file?)");
  std::vector<Llama2cEntry> entries;
  for (size_t i = 0; vocab_size < 0 ? pos < data.size() : i < static_cast<size_t>(vocab_size); ++i) {
    Llama2cEntry e;
    int32_t len = 0;
    read(&e.score, 4, "score", i);
    read(&len, 4, "length", i);
    PC_CHECK(len >= 0 && len <= max_len, path, ": entry ", i, " has length ", len, " (max_token_length ", max_len, ")");
    PC_CHECK(std::isfinite(e.score), path, ": entry ", i, " has a non-finite score");
    e.bytes.resize(len);
    read(e.bytes.data(), len, "bytes", i);
    entries.push_back(std::move(e));
  }
  PC_CHECK(pos == data.size(), path, ": ", data.size() - pos, " bytes after the ", vocab_size,
           " entries (is the vocabulary size right?)");
  PC_CHECK(entries.size() > 259, path, ": ", entries.size(), " entries; expected <unk>, <s>, </s>, 256 byte tokens and more");
  return entries;
}
}  // namespace

std::unique_ptr<Tokenizer> TokenizerFromLlama2c(const std::string& tok_bin_path, int32_t vocab_size) {
  std::vector<Llama2cEntry> entries = ReadLlama2cFile(tok_bin_path, vocab_size);
  const std::string& path = tok_bin_path;
  PC_CHECK(entries[0].bytes == "<unk>" && entries[1].bytes == "\n<s>\n" && entries[2].bytes == "\n</s>\n", path,
           ": ids 0, 1, 2 must be <unk>, \\n<s>\\n, \\n</s>\\n (llama2.c's export of sentencepiece's specials)");
  tok::SpBpeVocab v;
  v.pieces.resize(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    tok::SpPiece& p = v.pieces[i];
    p.score = entries[i].score;
    if (i < 3) {
      p.piece = i == 0 ? "<unk>" : i == 1 ? "<s>" : "</s>";
      p.type = i == 0 ? tok::SpPieceType::kUnknown : tok::SpPieceType::kControl;
      continue;
    }
    size_t bad = FindInvalidUtf8(entries[i].bytes);
    PC_CHECK(bad == std::string::npos, path, ": entry ", i, " is not valid UTF-8 at byte ", bad);
    if (i < 259) {
      char name[8];
      std::snprintf(name, sizeof(name), "<0x%02X>", static_cast<int>(i - 3));
      PC_CHECK(entries[i].bytes == name, path, ": entry ", i, " is '", entries[i].bytes, "', expected the byte token ",
               name, " (ids 3..258 are <0x00>..<0xFF>)");
      p.type = tok::SpPieceType::kByte;
    }
    for (char c : entries[i].bytes) {
      if (c == ' ') {
        p.piece += kMetaspace;  // llama2.c's exporter wrote "▁" as " "
      } else {
        p.piece += c;
      }
    }
  }
  // Exact score ties between pieces that merges can form: the one case where ranks may differ from llama2.c.
  std::unordered_map<float, int> formable_scores;
  std::unordered_map<std::string, int32_t> ids;
  for (size_t i = 3; i < v.pieces.size(); ++i) ids.emplace(v.pieces[i].piece, static_cast<int32_t>(i));
  int ties = 0;
  for (size_t i = 259; i < v.pieces.size(); ++i) {
    const std::string& p = v.pieces[i].piece;
    bool formable = false;
    for (size_t cut = 1; cut < p.size() && !formable; ++cut) formable = ids.count(p.substr(0, cut)) && ids.count(p.substr(cut));
    if (formable && formable_scores[v.pieces[i].score]++ > 0) ++ties;
  }
  if (ties > 0) {
    log::Warn("tokenizer", path, ": ", ties, " mergeable pieces share a score with another; where both merges "
              "apply at once llama2.c takes the leftmost, this tokenizer the lower id");
  }
  v.bos_id = 1;
  v.add_dummy_prefix = true;
  v.byte_fallback = true;
  v.merge_special_pieces = false;
  return std::make_unique<tok::BpeTokenizer>(tok::SentencePieceBpeJson(v, path), path + " (llama2.c tokenizer)");
}

}  // namespace pc
