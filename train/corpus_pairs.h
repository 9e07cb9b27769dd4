// train/corpus_pairs.h — attractors of a subject–verb dependency, and BLiMP-style minimal pairs
// with 0, 1 and 2 attractors built from generated sentences (docs/CORPUS.md). No LibTorch.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "train/corpus_generator.h"

namespace pc::corpus {

// Nouns strictly between the subject head and the verb.
int InterveningNouns(const Sentence& s, const Agreement& a);
// Those of them whose number differs from the subject's: the attractors.
int Attractors(const Sentence& s, const Agreement& a);
// The constructions between subject and verb, in order, joined with "+": "pp", "subject_relative",
// "object_relative" (e.g. "pp+object_relative"); "adjacent" when nothing intervenes.
std::string Construction(const Sentence& s, const Agreement& a);
// True when a coordinated NP lies between subject and verb: "the dog near the cat and the mice
// run" has a second parse with a coordinated subject, so the verb's other number is grammatical too.
bool CoordinationBetween(const Sentence& s, const Agreement& a);
// The root clause's dependency, or nullptr (every generated sentence has one).
const Agreement* MainAgreement(const Sentence& s);

// 64-bit FNV-1a of a sentence's text (the train set is kept as these hashes; a false match
// only costs a needless redraw).
uint64_t SentenceHash(const std::string& text);
using SentenceSet = std::unordered_set<uint64_t>;

// The three pair files: attractor count and file stem (BLiMP's UID).
struct PairCondition {
  int attractors;
  const char* uid;
  Stream stream;
};
const std::vector<PairCondition>& PairConditions();

struct Pair {
  Sentence parse;  // of the good sentence
  int agreement;   // index into parse.agreements: the dependency whose verb is changed
  std::string good, bad;
};

struct PairStats {
  int64_t draws = 0;                 // sentences drawn
  int64_t regenerated_in_train = 0;  // fitting pairs redrawn because good or bad occurs in train.txt
  int64_t regenerated_duplicate = 0; // fitting pairs redrawn because an earlier pair has the same good sentence
};

// A copy of `s` whose verb of agreement `a` has the other number.
Sentence FlipVerb(const Sentence& s, const Agreement& a);

// `count` pairs of `condition`, drawn from the condition's own stream of `seed`: sentences whose
// main dependency has a non-coordinated subject, no coordinated NP between subject and verb, and
// exactly `condition.attractors` attractors;
// the bad sentence is the good one with that verb's number flipped. Pairs whose good or bad
// sentence is in `train`, or whose good sentence is in `used`, are redrawn (and counted). Adds the
// good sentences to `used`. Throws when `max_draws` sentences do not yield `count` pairs.
std::vector<Pair> MakePairs(uint64_t seed, const PairCondition& condition, int64_t count, const SentenceSet& train,
                            SentenceSet* used, PairStats* stats, int64_t max_draws);

}  // namespace pc::corpus
