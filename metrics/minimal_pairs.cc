#include "metrics/minimal_pairs.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <numeric>

#include "calibration/windows.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/json_util.h"
#include "core/strings.h"

namespace pc {

std::vector<double> ScoreSequences(Model& model, const std::vector<std::vector<int64_t>>& sequences,
                                   const PairScoringOptions& options) {
  PC_CHECK(options.max_batch_tokens > 0, "minimal pairs: the batch must hold at least one token");
  const int64_t n = static_cast<int64_t>(sequences.size());
  std::vector<double> scores(n, 0.0);
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return sequences[a].size() < sequences[b].size(); });
  at::NoGradGuard no_grad;
  int64_t i = 0;
  while (i < n) {
    // Sorted ascending: the last sequence of a batch is its longest.
    int64_t j = i;
    while (j < n) {
      const int64_t len = static_cast<int64_t>(sequences[order[j]].size());
      if (j > i && (j - i + 1) * len > options.max_batch_tokens) break;
      ++j;
    }
    const int64_t B = j - i, L = static_cast<int64_t>(sequences[order[j - 1]].size());
    if (L >= 2) {
      at::Tensor tokens = at::empty({B, L}, at::kLong);   // right-padded with each row's start token
      at::Tensor mask = at::zeros({B, L - 1}, at::kBool);  // predicted positions that are real
      auto tk = tokens.accessor<int64_t, 2>();
      auto mk = mask.accessor<bool, 2>();
      for (int64_t b = 0; b < B; ++b) {
        const auto& s = sequences[order[i + b]];
        PC_ASSERT(!s.empty(), "minimal pairs: empty sequence");
        for (int64_t t = 0; t < L; ++t) tk[b][t] = t < static_cast<int64_t>(s.size()) ? s[t] : s[0];
        for (int64_t t = 0; t + 1 < static_cast<int64_t>(s.size()); ++t) mk[b][t] = true;
      }
      at::Tensor out = options.forward ? options.forward(tokens) : model.Forward(tokens);  // (B, L, V)
      at::Tensor logits = out.narrow(1, 0, L - 1).to(at::kFloat);                          // (B, L−1, V)
      at::Tensor target = tokens.narrow(1, 1, L - 1).unsqueeze(-1);                  // (B, L−1, 1)
      at::Tensor lp = logits.gather(-1, target).squeeze(-1) - at::logsumexp(logits, -1);
      at::Tensor sums = lp.to(at::kDouble).masked_fill(mask.logical_not(), 0.0).sum(-1);  // (B,)
      const double* ps = sums.data_ptr<double>();
      for (int64_t b = 0; b < B; ++b) scores[order[i + b]] = ps[b];
    }
    i = j;
  }
  return scores;
}

namespace {

// The start token and the sentence's ids, checked: at least one token, at most `context` in all
// (a longer pair is refused rather than scored beyond the positions the model was trained on, or
// truncated, which would change what is compared).
// `prefix` is prepended to the sentence before encoding (PairScoringOptions::prefix).
std::vector<int64_t> EncodeChecked(const Tokenizer& tokenizer, int64_t start, const MinimalPair& p, bool good,
                                   int64_t context, const std::string& prefix) {
  const char* field = good ? "sentence_good" : "sentence_bad";
  const std::string& sentence = good ? p.good : p.bad;
  std::vector<int32_t> ids = tokenizer.Encode(prefix.empty() ? sentence : prefix + sentence);
  PC_CHECK(!ids.empty(), p.file, " line ", p.line, ": ", field, " gives no tokens; a minimal pair needs two non-empty sentences");
  std::vector<int64_t> seq;
  seq.reserve(ids.size() + 1);
  seq.push_back(start);
  seq.insert(seq.end(), ids.begin(), ids.end());
  PC_CHECK(static_cast<int64_t>(seq.size()) <= context, p.file, " line ", p.line, ": ", field, " gives ", seq.size(),
           " tokens with the start token, more than the model's context of ", context,
           " (max_position_embeddings); minimal pairs are scored whole, never truncated: remove the pair");
  return seq;
}

}  // namespace

int64_t CheckPairLengths(const Tokenizer& tokenizer, const std::vector<MinimalPair>& pairs, int64_t context,
                         const std::string& prefix) {
  const int64_t start = ScoringStartId(tokenizer);
  int64_t longest = 0;
  for (const MinimalPair& p : pairs) {
    for (bool good : {true, false}) {
      longest = std::max<int64_t>(longest, static_cast<int64_t>(EncodeChecked(tokenizer, start, p, good, context, prefix).size()));
    }
  }
  return longest;
}

std::vector<PairScore> ScoreMinimalPairs(Model& model, const Tokenizer& tokenizer,
                                         const std::vector<MinimalPair>& pairs, const PairScoringOptions& options) {
  const int64_t start = ScoringStartId(tokenizer);
  // Each distinct token sequence is scored once (identical sentences tie exactly).
  std::map<std::vector<int64_t>, int64_t> unique;
  std::vector<std::vector<int64_t>> sequences;
  std::vector<int64_t> good(pairs.size()), bad(pairs.size());
  auto add = [&](bool is_good, const MinimalPair& p) {
    std::vector<int64_t> seq = EncodeChecked(tokenizer, start, p, is_good, model.config().max_pos,
                                                 options.prefix);
    auto it = unique.find(seq);
    if (it != unique.end()) return it->second;
    int64_t k = static_cast<int64_t>(sequences.size());
    unique.emplace(seq, k);
    sequences.push_back(std::move(seq));
    return k;
  };
  for (size_t i = 0; i < pairs.size(); ++i) {
    good[i] = add(true, pairs[i]);
    bad[i] = add(false, pairs[i]);
  }
  std::vector<double> scores = ScoreSequences(model, sequences, options);
  std::vector<PairScore> out(pairs.size());
  for (size_t i = 0; i < pairs.size(); ++i) {
    out[i].logp_good = scores[good[i]];
    out[i].logp_bad = scores[bad[i]];
    out[i].tokens_good = static_cast<int64_t>(sequences[good[i]].size()) - 1;
    out[i].tokens_bad = static_cast<int64_t>(sequences[bad[i]].size()) - 1;
  }
  return out;
}

PairAccuracy AggregatePairs(const std::vector<MinimalPair>& pairs, const std::vector<PairScore>& scores) {
  PC_ASSERT(pairs.size() == scores.size(), "pairs and scores differ in count");
  PairAccuracy a;
  a.overall.group = "all";
  std::map<std::string, size_t> file_row;
  std::map<std::string, AccuracyRow> terms;
  auto count = [](AccuracyRow& r, const PairScore& s) {
    ++r.pairs;
    if (s.correct()) ++r.correct;
    if (s.tie()) ++r.ties;
  };
  for (size_t i = 0; i < pairs.size(); ++i) {
    auto it = file_row.find(pairs[i].file);
    if (it == file_row.end()) {
      it = file_row.emplace(pairs[i].file, a.by_file.size()).first;
      a.by_file.push_back(AccuracyRow{pairs[i].file});
    }
    count(a.by_file[it->second], scores[i]);
    AccuracyRow& t = terms[pairs[i].term];
    t.group = pairs[i].term;
    count(t, scores[i]);
    count(a.overall, scores[i]);
  }
  for (auto& [name, row] : terms) a.by_term.push_back(row);
  for (auto* rows : {&a.by_file, &a.by_term}) {
    for (auto& r : *rows) r.accuracy = r.pairs > 0 ? static_cast<double>(r.correct) / static_cast<double>(r.pairs) : 0;
  }
  a.overall.accuracy =
      a.overall.pairs > 0 ? static_cast<double>(a.overall.correct) / static_cast<double>(a.overall.pairs) : 0;
  return a;
}

}  // namespace pc
