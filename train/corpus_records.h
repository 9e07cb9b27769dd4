// train/corpus_records.h — the JSON lines of the pair files (BLiMP's fields plus ours) and of
// depths.jsonl, and the statistics of a generated text for the manifest. No LibTorch.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_set>
#include <vector>

#include "train/corpus_pairs.h"

namespace pc::corpus {

// One line of a pair file: sentence_good, sentence_bad, BLiMP's one_prefix_* fields, field,
// linguistics_term, UID, BLiMP's method flags, pairID, then attractors, intervening_nouns,
// construction, subject/verb words and indices, subject_number.
nlohmann::ordered_json PairRecord(const Pair& pair, const std::string& uid, int64_t pair_id);

// One line of depths.jsonl: sentence, words, depth, pos, agreements, tree.
nlohmann::ordered_json DepthRecord(const Sentence& s);

// Accumulates the manifest's statistics of one text (train or valid).
class TextStats {
 public:
  void Add(const Sentence& s, const std::vector<std::string>& words);
  nlohmann::ordered_json LengthJson() const;      // mean, percentiles, share of 5-25 words
  nlohmann::ordered_json AttractorJson() const;   // histograms over dependencies, constructions
  nlohmann::ordered_json RuleJson() const;        // times each rule was used
  nlohmann::ordered_json DepthJson() const;       // mean and max word depth
  int64_t sentences() const { return sentences_; }
  int64_t words() const { return words_; }
  int64_t distinct_words() const { return static_cast<int64_t>(vocabulary_.size()); }

 private:
  int64_t sentences_ = 0, words_ = 0, depth_sum_ = 0, coordinated_subjects_ = 0, dependencies_ = 0;
  int max_depth_ = 0;
  std::vector<int64_t> length_hist_;           // [words] -> sentences
  std::vector<int64_t> main_attractors_ = std::vector<int64_t>(4, 0);  // 0, 1, 2, 3+
  std::vector<int64_t> all_attractors_ = std::vector<int64_t>(4, 0);
  std::map<std::string, int64_t> main_constructions_;
  std::vector<int64_t> rule_uses_;
  std::unordered_set<std::string> vocabulary_;
};

// Rounds to 4 decimals for the manifest (stable, readable numbers).
double Round4(double v);

}  // namespace pc::corpus
