// metrics/minimal_pairs.h — minimal-pair accuracy (BLiMP JSON lines) by docs/METRICS.md
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
#include <functional>
#include <string>
#include <vector>

#include "metrics/pairs_file.h"
#include "model/model.h"
#include "model/tokenizer/tokenizer.h"

namespace pc {

struct PairScore {
  double logp_good = 0, logp_bad = 0;  // summed log-probabilities (nats)
  int64_t tokens_good = 0, tokens_bad = 0;
  bool correct() const { return logp_good > logp_bad; }
  bool tie() const { return logp_good == logp_bad; }
};

struct PairScoringOptions {
  int64_t max_batch_tokens = 8192;  // padded tokens per forward
  // Text put before every sentence before tokenizing (not scored apart: its tokens count in the
  // sum). " " scores as lm-evaluation-harness's BLiMP, whose continuation is target_delimiter " "
  // followed by the sentence; "" (default) is docs/METRICS.md's scoring ("Minimal pairs").
  std::string prefix;
  // tokens (B, T) -> logits (B, T, V) in place of model.Forward(tokens), e.g. a forward with
  // hooks (probes); called once per batch, in the same order for the same sequences. Empty: plain forward.
  std::function<at::Tensor(const at::Tensor& tokens)> forward;
};

// Summed log-probability of tokens 1.. of every sequence given its prefix (token 0 is the
// start token). Sequences of length 1 score 0.
std::vector<double> ScoreSequences(Model& model, const std::vector<std::vector<int64_t>>& sequences,
                                   const PairScoringOptions& options = {});

// Every sentence is scored whole: one that gives no tokens, or more tokens (with the start token)
// than the model's context `max_position_embeddings`, is refused naming its file and line
// (CheckPairLengths), never truncated.
std::vector<PairScore> ScoreMinimalPairs(Model& model, const Tokenizer& tokenizer,
                                         const std::vector<MinimalPair>& pairs, const PairScoringOptions& options = {});

// The checks of ScoreMinimalPairs, before any model is loaded: refuses a sentence that gives no
// tokens or more than `context` tokens with the start token ("<file> line N: sentence_good gives
// 4001 tokens, more than the model's context of 2048"). Returns the longest sequence's tokens
// (for the memory estimate: a sequence longer than the pair batch gets a batch of its own).
// `prefix`: the text prepended to every sentence before encoding (PairScoringOptions::prefix).
int64_t CheckPairLengths(const Tokenizer& tokenizer, const std::vector<MinimalPair>& pairs, int64_t context,
                         const std::string& prefix = "");

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
