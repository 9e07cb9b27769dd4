// train/corpus.h — the synthetic agreement corpus: train/valid text, minimal pairs with 0/1/2
// attractors, per-word parse depths and a manifest, written as one staged folder
// (`perpcomp corpus`, docs/CORPUS.md). No LibTorch.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace pc::corpus {

// Bumped whenever the bytes written for a given seed and options change.
inline constexpr int kGeneratorVersion = 2;  // 2: more modified subjects (attractors)

struct CorpusOptions {
  int64_t sentences = 100000;         // train.txt
  int64_t valid_sentences = 0;        // valid.txt; 0: max(1, sentences / 10)
  int64_t seed = 0;
  int64_t pairs_per_condition = 500;  // pairs in each of the three pair files
  int64_t depth_samples = 1000;       // depths.jsonl: the first K sentences of valid.txt (at most all)

  // Throws pc::Error naming the option (as on the command line) and the bad value.
  void Validate() const;
  int64_t ValidCount() const;
};

struct CorpusFile {
  std::string name;  // relative to the corpus folder: "train.txt", "pairs/agreement_0_attractors.jsonl", ...
  std::string bytes;
};

struct Corpus {
  std::vector<CorpusFile> files;  // every file of the folder, corpus.json last
  nlohmann::ordered_json manifest;
};

// Generates every file in memory. Same options -> same bytes.
Corpus BuildCorpus(const CorpusOptions& opts);

// Validates `opts`, refuses an existing `out_dir` unless `overwrite` (before any work), builds the
// corpus and writes it under a temporary name beside `out_dir`, renamed into place when complete.
// Returns the manifest.
nlohmann::ordered_json WriteCorpus(const CorpusOptions& opts, const std::string& out_dir, bool overwrite);

}  // namespace pc::corpus
