// metrics/minimal_pairs.h — minimal-pair accuracy (BLiMP JSON lines) by CONVENTIONS.md
// "Minimal pairs": each sentence scored alone after the scoring start token (BOS, else
// end-of-text), log-probabilities of all its tokens summed; a pair is right when
// log p(good) > log p(bad); ties count as wrong and are reported. Accuracy per file and per
// `linguistics_term`.
//
// Sentences are scored in batches: sorted by length, right-padded to the longest of the
// batch (a causal model's outputs at real positions do not depend on what follows them), the
// padded positions masked out of the sums.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/model.h"
#include "model/tokenizer/tokenizer.h"

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

// The six BLiMP subject–verb agreement files (stems), in lm-evaluation-harness's order.
const std::vector<std::string>& BlimpSvaFiles();

// FILE (a .jsonl), DIR (its *.jsonl, sorted) or the preset "blimp-sva" (the six files of
// <shared_data>/tasks/blimp/data). Errors: a missing path, a folder without .jsonl files, the
// preset when the shared data is absent (naming where it was looked for).
std::vector<std::string> ResolvePairFiles(const std::string& spec, const std::string& shared_data_dir);

struct PairScore {
  double logp_good = 0, logp_bad = 0;  // summed log-probabilities (nats)
  int64_t tokens_good = 0, tokens_bad = 0;
  bool correct() const { return logp_good > logp_bad; }
  bool tie() const { return logp_good == logp_bad; }
};

struct PairScoringOptions {
  int64_t max_batch_tokens = 8192;  // padded tokens per forward
};

// Summed log-probability of tokens 1.. of every sequence given its prefix (token 0 is the
// start token). Sequences of length 1 score 0.
std::vector<double> ScoreSequences(Model& model, const std::vector<std::vector<int64_t>>& sequences,
                                   const PairScoringOptions& options = {});

std::vector<PairScore> ScoreMinimalPairs(Model& model, const Tokenizer& tokenizer,
                                         const std::vector<MinimalPair>& pairs, const PairScoringOptions& options = {});

struct AccuracyRow {
  std::string group;  // file stem, linguistics_term, or "all"
  int64_t pairs = 0, correct = 0, ties = 0;
  double accuracy = 0;  // correct / pairs
};

struct PairAccuracy {
  std::vector<AccuracyRow> by_file;  // in the order files first appear
  std::vector<AccuracyRow> by_term;  // sorted by term
  AccuracyRow overall;
};

PairAccuracy AggregatePairs(const std::vector<MinimalPair>& pairs, const std::vector<PairScore>& scores);

}  // namespace pc
