// metrics/pairs_file.h — minimal-pair files (BLiMP JSON lines): reading and resolving, without
// LibTorch (fuzzed: tests/fuzz/). Scoring is in metrics/minimal_pairs.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pc {

struct MinimalPair {
  std::string good, bad;  // sentence_good, sentence_bad
  std::string file;       // the file's stem ("regular_plural_subject_verb_agreement_1")
  std::string term;       // linguistics_term ("" when absent)
  std::string uid;        // UID (the file stem when absent)
  std::string pair_id;    // pairID (the line number when absent)
  int64_t line = 0;       // 1-based line in its file
};

// One JSON-lines file; blank lines are skipped. Errors name the file and line: not JSON, not
// an object, a missing or non-string sentence_good / sentence_bad.
std::vector<MinimalPair> ReadMinimalPairs(const std::string& path);
// The same for bytes already read; `path` names them in errors and gives the file stem.
std::vector<MinimalPair> ParseMinimalPairs(const std::string& bytes, const std::string& path);

// The six BLiMP subject–verb agreement files (stems), in lm-evaluation-harness's order.
const std::vector<std::string>& BlimpSvaFiles();

// FILE (a .jsonl), DIR (its *.jsonl, sorted) or the preset "blimp-sva" (the six files of
// <shared_data>/tasks/blimp/data). Errors: a missing path, a folder without .jsonl files, the
// preset when the shared data is absent (naming where it was looked for).
std::vector<std::string> ResolvePairFiles(const std::string& spec, const std::string& shared_data_dir);
// Every --pairs spec resolved, in order; a file reached twice (the same file given twice, or a file
// and its folder) is refused, since its pairs would count twice.
std::vector<std::string> ResolvePairSpecs(const std::vector<std::string>& specs, const std::string& shared_data_dir);

}  // namespace pc
