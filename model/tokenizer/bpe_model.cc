#include "model/tokenizer/bpe_model.h"

#include <cstdio>
#include <queue>

#include "core/error.h"
#include "model/tokenizer/utf8.h"

namespace pc::tok {

namespace {
constexpr std::string_view kMetaspace = "\xE2\x96\x81";  // U+2581 "▁"
constexpr size_t kMaxCachedChunk = 256;                   // longer chunks are rare; not worth the memory

// True when some piece has "▁" right after a character that is not "▁".
bool HasMetaspaceAfterOtherChar(const std::string& piece) {
  size_t pos = piece.find(kMetaspace, 1);
  while (pos != std::string::npos) {
    if (pos < kMetaspace.size() || piece.compare(pos - kMetaspace.size(), kMetaspace.size(), kMetaspace) != 0) {
      return true;
    }
    pos = piece.find(kMetaspace, pos + 1);
  }
  return false;
}
}  // namespace

BpeModel::BpeModel(const std::vector<std::pair<std::string, int32_t>>& vocab,
                   const std::vector<std::pair<std::string, std::string>>& merges, BpeOptions options,
                   const std::string& where)
    : options_(std::move(options)) {
  PC_CHECK(!vocab.empty(), where, ": the vocabulary is empty");
  int32_t max_id = -1;
  for (const auto& [piece, id] : vocab) {
    PC_CHECK(id >= 0, where, ": vocab entry '", piece, "' has a negative id ", id);
    max_id = std::max(max_id, id);
  }
  PC_CHECK(static_cast<int64_t>(max_id) < 2 * static_cast<int64_t>(vocab.size()) + 1000000, where,
           ": vocab ids are out of range: largest id ", max_id, " for ", vocab.size(), " entries");
  id_to_piece_.resize(max_id + 1);
  has_id_.assign(max_id + 1, false);
  piece_to_id_.reserve(vocab.size() * 2);
  for (const auto& [piece, id] : vocab) {
    PC_CHECK(!has_id_[id], where, ": duplicate id ", id, " for vocab entries '", id_to_piece_[id], "' and '",
             piece, "'");
    bool inserted = piece_to_id_.emplace(piece, id).second;
    PC_CHECK(inserted, where, ": duplicate vocab entry '", piece, "'");
    id_to_piece_[id] = piece;
    has_id_[id] = true;
  }

  if (!options_.unk_token.empty()) {
    unk_id_ = Find(options_.unk_token);
    PC_CHECK(unk_id_ >= 0, where, ": unk_token '", options_.unk_token, "' is not in the vocabulary");
  }
  byte_fallback_ids_.assign(256, -1);
  if (options_.byte_fallback) {
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof(name), "<0x%02X>", b);
      byte_fallback_ids_[b] = Find(name);
    }
  }

  size_t prefix_len = options_.continuing_subword_prefix.size();
  merge_map_.reserve(merges.size() * 2);
  merge_list_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const std::string& a = merges[rank].first;
    const std::string& b = merges[rank].second;
    auto describe = [&] { return Str("merges[", rank, "] '", a, " ", b, "'"); };
    int32_t a_id = Find(a), b_id = Find(b);
    PC_CHECK(a_id >= 0, where, ": ", describe(), ": '", a, "' is not in the vocabulary");
    PC_CHECK(b_id >= 0, where, ": ", describe(), ": '", b, "' is not in the vocabulary");
    PC_CHECK(prefix_len == 0 || b.compare(0, prefix_len, options_.continuing_subword_prefix) == 0,
             where, ": ", describe(), ": '", b, "' lacks the continuing_subword_prefix '",
             options_.continuing_subword_prefix, "'");
    std::string merged = a + b.substr(prefix_len);
    int32_t new_id = Find(merged);
    PC_CHECK(new_id >= 0, where, ": ", describe(), ": the merged token '", merged, "' is not in the vocabulary");
    merge_map_[Key(a_id, b_id)] = Merge{static_cast<int32_t>(rank), new_id};  // a later duplicate wins, as in HF
    merge_list_.emplace_back(a_id, b_id);
  }

  split_at_metaspace_ = options_.continuing_subword_prefix.empty() && options_.end_of_word_suffix.empty() &&
                        !options_.ignore_merges && Find(std::string(kMetaspace)) >= 0;
  for (const auto& [piece, id] : piece_to_id_) {
    if (!split_at_metaspace_) break;
    if (HasMetaspaceAfterOtherChar(piece)) split_at_metaspace_ = false;
  }
}

int32_t BpeModel::Find(const std::string& piece) const {
  auto it = piece_to_id_.find(piece);
  return it == piece_to_id_.end() ? -1 : it->second;
}

const BpeModel::Merge* BpeModel::FindMerge(int32_t a, int32_t b) const {
  auto it = merge_map_.find(Key(a, b));
  return it == merge_map_.end() ? nullptr : &it->second;
}

void BpeModel::EncodeWord(std::string_view word, BpeWordCache* cache, std::vector<int32_t>* out) const {
  size_t start = 0;
  while (start < word.size()) {
    size_t end = word.size();
    if (split_at_metaspace_) {  // cut before the next "▁" whose previous character is not "▁"
      for (size_t pos = word.find(kMetaspace, start + 1); pos != std::string_view::npos;
           pos = word.find(kMetaspace, pos + 1)) {
        bool after_metaspace = pos >= kMetaspace.size() &&
                               word.compare(pos - kMetaspace.size(), kMetaspace.size(), kMetaspace) == 0;
        if (!after_metaspace) {
          end = pos;
          break;
        }
      }
    }
    std::string_view chunk = word.substr(start, end - start);
    if (cache != nullptr && chunk.size() <= kMaxCachedChunk) {
      auto it = cache->find(std::string(chunk));
      if (it == cache->end()) {
        std::vector<int32_t> ids;
        EncodeChunk(chunk, &ids);
        it = cache->emplace(std::string(chunk), std::move(ids)).first;
      }
      out->insert(out->end(), it->second.begin(), it->second.end());
    } else {
      EncodeChunk(chunk, out);
    }
    start = end;
  }
}

void BpeModel::EncodeChunk(std::string_view chunk, std::vector<int32_t>* out) const {
  if (options_.ignore_merges) {
    int32_t id = Find(std::string(chunk));
    if (id >= 0) {
      out->push_back(id);
      return;
    }
  }
  std::vector<int32_t> ids;
  InitialSymbols(chunk, &ids);
  MergeAll(&ids);
  out->insert(out->end(), ids.begin(), ids.end());
}

void BpeModel::InitialSymbols(std::string_view chunk, std::vector<int32_t>* ids) const {
  ids->reserve(chunk.size());
  bool unk_pending = false;  // an unk symbol waiting (fuse_unk joins consecutive unknown characters)
  std::string s;
  for (size_t pos = 0; pos < chunk.size();) {
    size_t begin = pos;
    pos += std::min<size_t>(Utf8Len(static_cast<unsigned char>(chunk[pos])), chunk.size() - pos);
    std::string_view ch = chunk.substr(begin, pos - begin);
    s.clear();
    if (begin > 0) s += options_.continuing_subword_prefix;
    s.append(ch.data(), ch.size());
    if (pos == chunk.size()) s += options_.end_of_word_suffix;
    int32_t id = Find(s);
    if (id >= 0) {
      if (unk_pending) ids->push_back(unk_id_), unk_pending = false;
      ids->push_back(id);
      continue;
    }
    if (options_.byte_fallback) {
      bool all = true;
      for (unsigned char b : s) all = all && byte_fallback_ids_[b] >= 0;
      if (all) {  // as HF: a pending unk is not flushed before byte tokens
        for (unsigned char b : s) ids->push_back(byte_fallback_ids_[b]);
        continue;
      }
    }
    if (unk_id_ >= 0) {
      if (unk_pending && !options_.fuse_unk) ids->push_back(unk_id_);
      unk_pending = true;
    }
  }
  if (unk_pending) ids->push_back(unk_id_);
}

void BpeModel::MergeAll(std::vector<int32_t>* ids) const {
  const int n = static_cast<int>(ids->size());
  if (n < 2) return;
  // Doubly linked symbols; removed ones have id -1.
  std::vector<int32_t> sym = *ids, prev(n), next(n);
  for (int i = 0; i < n; ++i) prev[i] = i - 1, next[i] = i + 1 < n ? i + 1 : -1;
  struct Candidate {
    int32_t rank, pos, new_id;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
  for (int i = 0; i + 1 < n; ++i) {
    if (const Merge* m = FindMerge(sym[i], sym[i + 1])) queue.push({m->rank, i, m->new_id});
  }
  while (!queue.empty()) {
    Candidate top = queue.top();
    queue.pop();
    int p = top.pos;
    if (sym[p] < 0 || next[p] < 0) continue;
    int q = next[p];
    const Merge* m = FindMerge(sym[p], sym[q]);
    if (m == nullptr || m->new_id != top.new_id) continue;  // stale entry
    sym[p] = top.new_id;
    sym[q] = -1;
    next[p] = next[q];
    if (next[q] >= 0) prev[next[q]] = p;
    if (prev[p] >= 0) {
      if (const Merge* left = FindMerge(sym[prev[p]], sym[p])) queue.push({left->rank, prev[p], left->new_id});
    }
    if (next[p] >= 0) {
      if (const Merge* right = FindMerge(sym[p], sym[next[p]])) queue.push({right->rank, p, right->new_id});
    }
  }
  ids->clear();
  for (int i = 0; i >= 0; i = next[i]) ids->push_back(sym[i]);
}

}  // namespace pc::tok
