// model/tokenizer/bpe_model.h — the BPE merge engine shared by every BPE tokenizer.
//
// Semantics are those of Hugging Face tokenizers' BPE model (models/bpe/{model,word}.rs): a word is
// split into characters, each looked up in the vocabulary (unknown ones become byte tokens <0xNN>
// with byte_fallback, else the unk token, fused when fuse_unk, else they are dropped), then the pair
// of adjacent symbols with the lowest merge rank is merged, leftmost first on equal rank, until no
// listed pair remains. A binary heap makes a word of n characters O(n log n).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace pc::tok {

struct BpeOptions {
  std::string unk_token;  // empty: no unk token (unknown characters are dropped, as HF does)
  bool fuse_unk = false;
  bool byte_fallback = false;
  std::string continuing_subword_prefix;  // added to every character but the first
  std::string end_of_word_suffix;         // added to the last character
  bool ignore_merges = false;             // a word found whole in the vocabulary is one token
};

// Word -> ids, kept for the duration of one Encode call (no locking needed).
using BpeWordCache = std::unordered_map<std::string, std::vector<int32_t>>;

class BpeModel {
 public:
  // `vocab`: (piece, id) pairs, ids unique and >= 0. `merges`: pairs of pieces, index = rank.
  // Errors name `where` ("tokenizer.json: model"), the entry and its index.
  BpeModel(const std::vector<std::pair<std::string, int32_t>>& vocab,
           const std::vector<std::pair<std::string, std::string>>& merges, BpeOptions options,
           const std::string& where);

  // One more than the largest id (ids without a piece are possible: added tokens fill them).
  int32_t id_end() const { return static_cast<int32_t>(id_to_piece_.size()); }
  bool HasId(int32_t id) const { return id >= 0 && id < id_end() && has_id_[id]; }
  const std::string& Piece(int32_t id) const { return id_to_piece_[id]; }
  int32_t Find(const std::string& piece) const;  // -1 when absent
  int32_t num_pieces() const { return static_cast<int32_t>(piece_to_id_.size()); }
  const BpeOptions& options() const { return options_; }
  int32_t unk_id() const { return unk_id_; }
  // Merges as ids, in rank order (duplicates kept as given).
  const std::vector<std::pair<int32_t, int32_t>>& merges() const { return merge_list_; }

  // Appends the ids of one pre-tokenized word. `cache` may be null.
  void EncodeWord(std::string_view word, BpeWordCache* cache, std::vector<int32_t>* out) const;

 private:
  struct Merge {
    int32_t rank;
    int32_t new_id;
  };
  static uint64_t Key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  const Merge* FindMerge(int32_t a, int32_t b) const;
  void EncodeChunk(std::string_view chunk, std::vector<int32_t>* out) const;
  void InitialSymbols(std::string_view chunk, std::vector<int32_t>* ids) const;
  void MergeAll(std::vector<int32_t>* ids) const;

  BpeOptions options_;
  std::vector<std::string> id_to_piece_;
  std::vector<bool> has_id_;
  std::unordered_map<std::string, int32_t> piece_to_id_;
  std::unordered_map<uint64_t, Merge> merge_map_;
  std::vector<std::pair<int32_t, int32_t>> merge_list_;
  int32_t unk_id_ = -1;
  std::vector<int32_t> byte_fallback_ids_;  // 256 ids of <0x00>..<0xFF>, -1 where absent
  // True when no piece has "▁" right after another character: words may then be cut before every
  // "▁" that follows another character without changing the result (sentencepiece-style vocabularies;
  // lets the word cache work on text that has no pre-tokenizer).
  bool split_at_metaspace_ = false;
};

}  // namespace pc::tok
