#include "train/corpus.h"

#include <algorithm>
#include <chrono>
#include <set>

#include "core/error.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/sha256.h"
#include "train/corpus_pairs.h"
#include "train/corpus_records.h"

namespace pc::corpus {

namespace {
constexpr int64_t kMaxSentences = 100000000;
constexpr int64_t kMaxPairs = 1000000;
constexpr const char* kLinguisticsTerm = "subject_verb_agreement";

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// One text of `count` sentences from `stream`: its bytes (one sentence per line, each line ending
// in "\n"), its statistics, and (optionally) the hashes of its lines and its first parses.
struct Text {
  std::string bytes;
  TextStats stats;
  int64_t redrawn = 0;
  std::vector<Sentence> head;  // the first `keep` parses
};

Text GenerateText(uint64_t seed, Stream stream, int64_t count, int64_t keep, SentenceSet* hashes) {
  Text t;
  Generator gen(StreamSeed(seed, stream));
  Sentence s;
  t.bytes.reserve(static_cast<size_t>(count) * 56);
  for (int64_t i = 0; i < count; ++i) {
    gen.Next(&s);
    const std::vector<std::string> words = RenderWords(s);
    const size_t line_start = t.bytes.size();
    for (size_t w = 0; w < words.size(); ++w) {
      if (w > 0) t.bytes += ' ';
      t.bytes += words[w];
    }
    t.bytes += '.';
    if (hashes != nullptr) hashes->insert(SentenceHash(t.bytes.substr(line_start)));
    t.bytes += '\n';
    t.stats.Add(s, words);
    if (i < keep) t.head.push_back(s);
  }
  t.redrawn = gen.redrawn();
  return t;
}

int64_t CountLinesIn(const std::string& text, const SentenceSet& set) {
  int64_t n = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    n += set.count(SentenceHash(text.substr(start, end - start))) != 0;
    start = end + 1;
  }
  return n;
}

size_t LexiconForms() {
  std::set<std::string> forms;
  for (const LexEntry& e : Lexicon()) {
    for (const char* f : {e.sg, e.pl, e.before_vowel}) {
      if (f != nullptr) forms.insert(f);
    }
  }
  return forms.size();
}
}  // namespace

void CorpusOptions::Validate() const {
  PC_CHECK(sentences >= 1 && sentences <= kMaxSentences, "--sentences must be between 1 and ", kMaxSentences,
           " (got ", sentences, ")");
  PC_CHECK(valid_sentences >= 0 && valid_sentences <= kMaxSentences, "--valid-sentences must be between 0 (",
           "meaning --sentences / 10) and ", kMaxSentences, " (got ", valid_sentences, ")");
  PC_CHECK(seed >= 0, "--seed must be >= 0 (got ", seed, ")");
  PC_CHECK(pairs_per_condition >= 1 && pairs_per_condition <= kMaxPairs,
           "--pairs-per-condition must be between 1 and ", kMaxPairs, " (got ", pairs_per_condition, ")");
  PC_CHECK(depth_samples >= 0, "--depth-samples must be >= 0 (got ", depth_samples, ")");
}

int64_t CorpusOptions::ValidCount() const {
  return valid_sentences > 0 ? valid_sentences : std::max<int64_t>(1, sentences / 10);
}

Corpus BuildCorpus(const CorpusOptions& opts) {
  opts.Validate();
  const auto t0 = std::chrono::steady_clock::now();
  const uint64_t seed = static_cast<uint64_t>(opts.seed);
  const int64_t valid_count = opts.ValidCount();
  const int64_t depth_count = std::min(opts.depth_samples, valid_count);

  SentenceSet train_set;
  Text train = GenerateText(seed, Stream::kTrain, opts.sentences, 0, &train_set);
  Text valid = GenerateText(seed, Stream::kValid, valid_count, depth_count, nullptr);
  log::Info("corpus", "train ", opts.sentences, " + valid ", valid_count, " sentences (",
            train.stats.words() + valid.stats.words(), " words) in ", SecondsSince(t0), " s");

  Corpus corpus;
  corpus.files.push_back({"train.txt", std::move(train.bytes)});
  corpus.files.push_back({"valid.txt", std::move(valid.bytes)});
  const int64_t valid_in_train = CountLinesIn(corpus.files[1].bytes, train_set);

  nlohmann::ordered_json pair_stats = nlohmann::ordered_json::object();
  SentenceSet used;
  const int64_t max_draws = 5000 * opts.pairs_per_condition + 1000000;
  for (const PairCondition& cond : PairConditions()) {
    PairStats stats;
    std::vector<Pair> pairs = MakePairs(seed, cond, opts.pairs_per_condition, train_set, &used, &stats, max_draws);
    std::string bytes;
    for (size_t i = 0; i < pairs.size(); ++i) bytes += PairRecord(pairs[i], cond.uid, static_cast<int64_t>(i)).dump() + "\n";
    corpus.files.push_back({Str("pairs/", cond.uid, ".jsonl"), std::move(bytes)});
    pair_stats[cond.uid] = {{"attractors", cond.attractors},
                            {"pairs", static_cast<int64_t>(pairs.size())},
                            {"sentences_drawn", stats.draws},
                            {"regenerated_in_train", stats.regenerated_in_train},
                            {"regenerated_duplicate", stats.regenerated_duplicate}};
  }

  std::string depths;
  for (const Sentence& s : valid.head) depths += DepthRecord(s).dump() + "\n";
  corpus.files.push_back({"depths.jsonl", std::move(depths)});

  nlohmann::ordered_json& m = corpus.manifest;
  m["format"] = "perpcomp-corpus";
  m["generator_version"] = kGeneratorVersion;
  m["seed"] = opts.seed;
  m["rng"] = "std::mt19937_64 per stream, seeded with SplitMix64(SplitMix64(seed) ^ stream); "
             "distributions implemented in train/corpus_rng.h";
  m["streams"] = {{"train", static_cast<uint64_t>(Stream::kTrain)},
                  {"valid", static_cast<uint64_t>(Stream::kValid)}};
  for (const PairCondition& cond : PairConditions()) m["streams"][cond.uid] = static_cast<uint64_t>(cond.stream);
  m["options"] = {{"sentences", opts.sentences},
                  {"valid_sentences", valid_count},
                  {"pairs_per_condition", opts.pairs_per_condition},
                  {"depth_samples", depth_count}};
  m["grammar"] = {{"rules", Rules().size()},
                  {"lexicon_entries", Lexicon().size()},
                  {"decay", kGrammar.decay},
                  {"max_level", kGrammar.max_level},
                  {"p_animate", kGrammar.p_animate},
                  {"max_words", kGrammar.max_words}};
  m["counts"] = {{"train_sentences", train.stats.sentences()},
                 {"train_words", train.stats.words()},
                 {"valid_sentences", valid.stats.sentences()},
                 {"valid_words", valid.stats.words()},
                 {"valid_sentences_in_train", valid_in_train},
                 {"redrawn_over_max_words", train.redrawn + valid.redrawn}};
  m["vocabulary"] = {{"lexicon_forms", LexiconForms()}, {"train_distinct_words", train.stats.distinct_words()}};
  m["sentence_length"] = train.stats.LengthJson();
  m["depth"] = train.stats.DepthJson();
  m["attractor_statistics"] = train.stats.AttractorJson();
  m["rule_uses"] = train.stats.RuleJson();
  m["pairs"] = {{"linguistics_term", kLinguisticsTerm}, {"conditions", pair_stats}};
  nlohmann::ordered_json files = nlohmann::ordered_json::object();
  for (const CorpusFile& f : corpus.files) {
    files[f.name] = {{"sha256", Sha256Hex(f.bytes)}, {"bytes", f.bytes.size()}};
  }
  m["files"] = files;
  corpus.files.push_back({"corpus.json", m.dump(2) + "\n"});
  log::Info("corpus", "pairs and manifest done in ", SecondsSince(t0), " s");
  return corpus;
}

nlohmann::ordered_json WriteCorpus(const CorpusOptions& opts, const std::string& out_dir, bool overwrite) {
  opts.Validate();
  fs::StagedDir staged(out_dir, overwrite, "--out");
  Corpus corpus = BuildCorpus(opts);
  fs::MakeDirs(fs::Join(staged.path(), "pairs"));
  for (const CorpusFile& f : corpus.files) fs::WriteFileAtomic(fs::Join(staged.path(), f.name), f.bytes);
  staged.Commit();
  log::Info("corpus", "wrote ", corpus.files.size(), " files to ", staged.final_path());
  return corpus.manifest;
}

}  // namespace pc::corpus
