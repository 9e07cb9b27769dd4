#include "model/tokenizer/bpe_trainer.h"

#include <queue>
#include <set>

#include "core/error.h"
#include "model/tokenizer/added_vocab.h"
#include "model/tokenizer/bpe_tokenizer.h"
#include "model/tokenizer/pre_tokenizer.h"
#include "model/tokenizer/spec_util.h"
#include "model/tokenizer/utf8.h"

namespace pc {

void BpeTrainerOptions::Validate() const {
  const int32_t minimum = 256 + static_cast<int32_t>(special_tokens.size());
  PC_CHECK(vocab_size >= minimum, "tokenizer vocab_size ", vocab_size, " is smaller than the byte alphabet (256) plus ",
           special_tokens.size(), " special token(s) = ", minimum);
  PC_CHECK(vocab_size <= (1 << 24), "tokenizer vocab_size ", vocab_size, " is too large (at most ", 1 << 24, ")");
  PC_CHECK(min_pair_count >= 1, "min_pair_count must be >= 1, got ", min_pair_count);
  std::set<std::string> seen;
  for (const std::string& s : special_tokens) {
    PC_CHECK(!s.empty(), "special tokens must not be empty");
    PC_CHECK(seen.insert(s).second, "special token '", s, "' is listed twice");
    tok::CheckUtf8(s, "special token");
    size_t pos = 0;
    uint32_t first = tok::NextCodePoint(s, &pos);
    bool single_char = pos == s.size();
    PC_CHECK(!single_char || tok::ByteLevelAlphabet::Get().Decode(first) < 0, "special token '", s,
             "' is a single byte-level character (it would collide with the byte alphabet)");
  }
}

ByteLevelBpeTrainer::ByteLevelBpeTrainer(BpeTrainerOptions options) : options_(std::move(options)) {
  options_.Validate();
}

void ByteLevelBpeTrainer::AddText(const std::string& text) {
  tok::CheckUtf8(text, "tokenizer training text");
  std::vector<tok::AddedToken> specials;
  for (size_t i = 0; i < options_.special_tokens.size(); ++i) {
    tok::AddedToken t;
    t.content = options_.special_tokens[i];
    t.id = static_cast<int32_t>(i);
    t.special = true;
    specials.push_back(t);
  }
  tok::AddedVocabulary split(std::move(specials), nullptr);
  for (const tok::Piece& piece : split.SplitAndNormalize(text, nullptr)) {
    if (piece.id >= 0) continue;
    for (const auto& [start, end] : tok::Gpt2Split(piece.text)) {
      std::string word = piece.text.substr(start, end - start);
      auto [it, inserted] = word_index_.emplace(word, static_cast<int32_t>(words_.size()));
      if (inserted) {
        words_.push_back(std::move(word));
        counts_.push_back(0);
      }
      ++counts_[it->second];
      ++total_words_;
    }
  }
}

namespace {

uint64_t PairKey(int32_t a, int32_t b) { return (static_cast<uint64_t>(a) << 32) | static_cast<uint32_t>(b); }

struct HeapEntry {
  int64_t count;
  int32_t a, b;
  // priority_queue pops the largest: higher count first, then the smaller (a, b).
  bool operator<(const HeapEntry& o) const {
    if (count != o.count) return count < o.count;
    if (a != o.a) return a > o.a;
    return b > o.b;
  }
};

}  // namespace

BpeTrainResult ByteLevelBpeTrainer::Train() const {
  const auto& alphabet = tok::ByteLevelAlphabet::Get();
  const int32_t num_special = static_cast<int32_t>(options_.special_tokens.size());
  std::vector<std::string> pieces(options_.special_tokens);
  for (int b = 0; b < 256; ++b) pieces.push_back(alphabet.Encode(static_cast<uint8_t>(b)));
  std::unordered_map<std::string, int32_t> piece_ids;
  for (size_t i = 0; i < pieces.size(); ++i) piece_ids.emplace(pieces[i], static_cast<int32_t>(i));

  // Words as symbol ids; pair counts and the words that hold each pair (may hold stale entries).
  std::vector<std::vector<int32_t>> words(words_.size());
  std::unordered_map<uint64_t, int64_t> pair_count;
  std::unordered_map<uint64_t, std::vector<int32_t>> pair_words;
  for (size_t w = 0; w < words_.size(); ++w) {
    for (unsigned char c : words_[w]) words[w].push_back(num_special + c);
    for (size_t i = 0; i + 1 < words[w].size(); ++i) {
      uint64_t key = PairKey(words[w][i], words[w][i + 1]);
      pair_count[key] += counts_[w];
      pair_words[key].push_back(static_cast<int32_t>(w));
    }
  }
  std::priority_queue<HeapEntry> heap;
  for (const auto& [key, count] : pair_count) {
    heap.push({count, static_cast<int32_t>(key >> 32), static_cast<int32_t>(key & 0xFFFFFFFFu)});
  }

  BpeTrainResult result;
  result.words = total_words_;
  result.unique_words = static_cast<int64_t>(words_.size());
  std::vector<std::pair<std::string, std::string>> merges;
  std::vector<int32_t> stamp(words.size(), -1);
  std::unordered_map<uint64_t, int64_t> delta;
  std::vector<int32_t> merged;
  while (static_cast<int32_t>(pieces.size()) < options_.vocab_size) {
    HeapEntry top{0, 0, 0};
    bool found = false;
    while (!heap.empty()) {
      top = heap.top();
      heap.pop();
      auto it = pair_count.find(PairKey(top.a, top.b));
      if (it != pair_count.end() && it->second == top.count && top.count > 0) {
        found = true;
        break;
      }
    }
    if (!found || top.count < options_.min_pair_count) {
      result.stopped_early = true;
      break;
    }
    const int32_t a = top.a, b = top.b;
    std::string piece = pieces[a] + pieces[b];
    auto [pid, is_new] = piece_ids.emplace(piece, static_cast<int32_t>(pieces.size()));
    const int32_t c = pid->second;
    if (is_new) pieces.push_back(piece);
    merges.emplace_back(pieces[a], pieces[b]);
    const int32_t step = static_cast<int32_t>(merges.size());

    const uint64_t key = PairKey(a, b);
    std::vector<int32_t> holders = std::move(pair_words[key]);
    pair_words.erase(key);
    delta.clear();
    for (int32_t w : holders) {
      if (stamp[w] == step) continue;
      stamp[w] = step;
      std::vector<int32_t>& syms = words[w];
      merged.clear();
      for (size_t i = 0; i < syms.size(); ++i) {
        if (i + 1 < syms.size() && syms[i] == a && syms[i + 1] == b) {
          merged.push_back(c);
          ++i;
        } else {
          merged.push_back(syms[i]);
        }
      }
      if (merged.size() == syms.size()) continue;  // stale entry
      const int64_t n = counts_[w];
      for (size_t i = 0; i + 1 < syms.size(); ++i) delta[PairKey(syms[i], syms[i + 1])] -= n;
      for (size_t i = 0; i + 1 < merged.size(); ++i) {
        uint64_t k = PairKey(merged[i], merged[i + 1]);
        delta[k] += n;
        if (merged[i] == c || merged[i + 1] == c) pair_words[k].push_back(w);
      }
      syms.swap(merged);
    }
    for (const auto& [k, d] : delta) {
      if (d == 0) continue;
      int64_t& count = pair_count[k];
      count += d;
      if (count > 0) heap.push({count, static_cast<int32_t>(k >> 32), static_cast<int32_t>(k & 0xFFFFFFFFu)});
    }
    pair_count.erase(key);
  }
  result.merges = static_cast<int32_t>(merges.size());

  nlohmann::json doc;
  doc["version"] = "1.0";
  doc["truncation"] = nullptr;
  doc["padding"] = nullptr;
  doc["added_tokens"] = nlohmann::json::array();
  for (int32_t i = 0; i < num_special; ++i) {
    doc["added_tokens"].push_back({{"id", i}, {"content", pieces[i]}, {"single_word", false}, {"lstrip", false},
                                   {"rstrip", false}, {"normalized", false}, {"special", true}});
  }
  nlohmann::json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
  doc["normalizer"] = nullptr;
  doc["pre_tokenizer"] = byte_level;
  doc["post_processor"] = byte_level;
  doc["decoder"] = byte_level;
  nlohmann::json vocab = nlohmann::json::object();
  for (size_t i = 0; i < pieces.size(); ++i) vocab[pieces[i]] = i;
  doc["model"] = {{"type", "BPE"},          {"dropout", nullptr},        {"unk_token", nullptr},
                  {"continuing_subword_prefix", nullptr}, {"end_of_word_suffix", nullptr}, {"fuse_unk", false},
                  {"byte_fallback", false}, {"ignore_merges", false},    {"vocab", std::move(vocab)},
                  {"merges", tok::MergesToJson(merges)}};
  result.tokenizer = std::make_unique<tok::BpeTokenizer>(std::move(doc), "trained byte-level BPE");
  return result;
}

}  // namespace pc
