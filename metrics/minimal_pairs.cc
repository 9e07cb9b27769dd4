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

namespace {

std::string Stem(const std::string& path) {
  std::string b = fs::Basename(path);
  return EndsWith(b, ".jsonl") ? b.substr(0, b.size() - 6) : b;
}

std::string OptionalString(const nlohmann::json& obj, const std::string& key, const std::string& fallback,
                           const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (it->is_string()) return it->get<std::string>();
  PC_CHECK(it->is_number(), where, ": '", key, "' is ", it->type_name(), ", expected a string");
  return it->dump();
}

}  // namespace

std::vector<MinimalPair> ReadMinimalPairs(const std::string& path) {
  PC_CHECK(fs::Exists(path), "--pairs: '", path, "' does not exist");
  const std::string bytes = fs::ReadFile(path);
  const std::string stem = Stem(path);
  std::vector<MinimalPair> out;
  size_t start = 0;
  int64_t line_no = 0;
  while (start < bytes.size()) {
    size_t end = bytes.find('\n', start);
    if (end == std::string::npos) end = bytes.size();
    ++line_no;
    std::string line = bytes.substr(start, end - start);
    start = end + 1;
    if (Trim(line).empty()) continue;
    const std::string where = Str(path, " line ", line_no);
    nlohmann::json obj = ParseJson(line, where);
    PC_CHECK(obj.is_object(), where, ": expected a JSON object, got ", obj.type_name());
    MinimalPair p;
    p.good = JsonString(obj, "sentence_good", where);
    p.bad = JsonString(obj, "sentence_bad", where);
    p.file = stem;
    p.term = OptionalString(obj, "linguistics_term", "", where);
    p.uid = OptionalString(obj, "UID", stem, where);
    p.pair_id = OptionalString(obj, "pairID", std::to_string(line_no), where);
    p.line = line_no;
    out.push_back(std::move(p));
  }
  PC_CHECK(!out.empty(), "--pairs: '", path, "' holds no minimal pairs");
  return out;
}

const std::vector<std::string>& BlimpSvaFiles() {
  static const std::vector<std::string> files = {
      "distractor_agreement_relational_noun",    "distractor_agreement_relative_clause",
      "irregular_plural_subject_verb_agreement_1", "irregular_plural_subject_verb_agreement_2",
      "regular_plural_subject_verb_agreement_1",   "regular_plural_subject_verb_agreement_2"};
  return files;
}

std::vector<std::string> ResolvePairFiles(const std::string& spec, const std::string& shared_data_dir) {
  if (spec == "blimp-sva") {
    const std::string dir = fs::Join(shared_data_dir, "tasks/blimp/data");
    PC_CHECK(fs::IsDirectory(dir), "--pairs blimp-sva: the BLiMP data is not at '", dir,
             "' (set PERPCOMP_SHARED to the folder holding data/tasks/blimp, or pass the .jsonl files)");
    std::vector<std::string> files;
    for (const auto& stem : BlimpSvaFiles()) {
      std::string f = fs::Join(dir, stem + ".jsonl");
      PC_CHECK(fs::Exists(f), "--pairs blimp-sva: '", f, "' is missing");
      files.push_back(f);
    }
    return files;
  }
  PC_CHECK(fs::Exists(spec), "--pairs: '", spec, "' does not exist (expected a .jsonl file, a folder or blimp-sva)");
  if (!fs::IsDirectory(spec)) return {spec};
  std::vector<std::string> files;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(spec, ec), end; !ec && it != end; it.increment(ec)) {
    if (EndsWith(it->path().filename().string(), ".jsonl")) files.push_back(it->path().string());
  }
  PC_CHECK(!ec, "--pairs: cannot list '", spec, "': ", ec.message());
  PC_CHECK(!files.empty(), "--pairs: the folder '", spec, "' holds no .jsonl files");
  std::sort(files.begin(), files.end());
  return files;
}

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
      at::Tensor logits = model.Forward(tokens).narrow(1, 0, L - 1).to(at::kFloat);  // (B, L−1, V)
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

std::vector<PairScore> ScoreMinimalPairs(Model& model, const Tokenizer& tokenizer,
                                         const std::vector<MinimalPair>& pairs, const PairScoringOptions& options) {
  const int64_t start = ScoringStartId(tokenizer);
  // Each distinct token sequence is scored once (identical sentences tie exactly).
  std::map<std::vector<int64_t>, int64_t> unique;
  std::vector<std::vector<int64_t>> sequences;
  std::vector<int64_t> good(pairs.size()), bad(pairs.size());
  const bool learned = model.arch().pos == PosKind::kLearned;
  auto add = [&](const std::string& sentence, const MinimalPair& p) {
    std::vector<int32_t> ids = tokenizer.Encode(sentence);
    std::vector<int64_t> seq;
    seq.reserve(ids.size() + 1);
    seq.push_back(start);
    seq.insert(seq.end(), ids.begin(), ids.end());
    PC_CHECK(!learned || static_cast<int64_t>(seq.size()) <= model.config().max_pos, p.file, " line ", p.line,
             ": the sentence gives ", seq.size(), " tokens, more than the model's ", model.config().max_pos,
             " positions");
    auto it = unique.find(seq);
    if (it != unique.end()) return it->second;
    int64_t k = static_cast<int64_t>(sequences.size());
    unique.emplace(seq, k);
    sequences.push_back(std::move(seq));
    return k;
  };
  for (size_t i = 0; i < pairs.size(); ++i) {
    good[i] = add(pairs[i].good, pairs[i]);
    bad[i] = add(pairs[i].bad, pairs[i]);
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
