#include "train/corpus_pairs.h"

#include "core/error.h"
#include "core/strings.h"

namespace pc::corpus {

int InterveningNouns(const Sentence& s, const Agreement& a) {
  int n = 0;
  for (int i = a.subject + 1; i < a.verb; ++i) n += Lexicon()[s.words[i].entry].cls == Sym::kNoun;
  return n;
}

int Attractors(const Sentence& s, const Agreement& a) {
  int n = 0;
  for (int i = a.subject + 1; i < a.verb; ++i) {
    const Word& w = s.words[i];
    n += Lexicon()[w.entry].cls == Sym::kNoun && w.num != a.num;
  }
  return n;
}

std::string Construction(const Sentence& s, const Agreement& a) {
  std::vector<std::string> parts;
  for (const Node& n : s.nodes) {
    if (n.first <= a.subject || n.first >= a.verb) continue;
    if (n.sym == Sym::kPP || n.sym == Sym::kRC || n.sym == Sym::kCP) parts.push_back(Rules()[n.rule].name);
  }
  return parts.empty() ? "adjacent" : Join(parts, "+");
}

bool CoordinationBetween(const Sentence& s, const Agreement& a) {
  for (int i = a.subject + 1; i < a.verb; ++i) {
    if (Lexicon()[s.words[i].entry].cls == Sym::kConjNP) return true;
  }
  return false;
}

const Agreement* MainAgreement(const Sentence& s) {
  for (const Agreement& a : s.agreements) {
    if (a.main) return &a;
  }
  return nullptr;
}

uint64_t SentenceHash(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

const std::vector<PairCondition>& PairConditions() {
  static const std::vector<PairCondition> conditions = {
      {0, "agreement_0_attractors", Stream::kPairs0},
      {1, "agreement_1_attractor", Stream::kPairs1},
      {2, "agreement_2_attractors", Stream::kPairs2},
  };
  return conditions;
}

Sentence FlipVerb(const Sentence& s, const Agreement& a) {
  Sentence out = s;
  Word& v = out.words[a.verb];
  v.num = v.num == Number::kSg ? Number::kPl : Number::kSg;
  return out;
}

std::vector<Pair> MakePairs(uint64_t seed, const PairCondition& condition, int64_t count, const SentenceSet& train,
                            SentenceSet* used, PairStats* stats, int64_t max_draws) {
  Generator gen(StreamSeed(seed, condition.stream));
  std::vector<Pair> pairs;
  pairs.reserve(static_cast<size_t>(count));
  Sentence s;
  while (static_cast<int64_t>(pairs.size()) < count) {
    PC_CHECK(stats->draws < max_draws, "pairs ", condition.uid, ": only ", pairs.size(), " of ", count,
             " pairs after ", max_draws, " sentences (", stats->regenerated_in_train,
             " redrawn because they occur in train.txt); lower --pairs-per-condition or --sentences");
    gen.Next(&s);
    ++stats->draws;
    const Agreement* main = MainAgreement(s);
    PC_ASSERT(main != nullptr, "generated sentence without a main dependency");
    if (main->coordinated || CoordinationBetween(s, *main) || Attractors(s, *main) != condition.attractors) continue;
    std::string good = Render(s);
    std::string bad = Render(FlipVerb(s, *main));
    const uint64_t hg = SentenceHash(good);
    if (train.count(hg) != 0 || train.count(SentenceHash(bad)) != 0) {
      ++stats->regenerated_in_train;
      continue;
    }
    if (!used->insert(hg).second) {
      ++stats->regenerated_duplicate;
      continue;
    }
    const int index = static_cast<int>(main - s.agreements.data());
    pairs.push_back({s, index, std::move(good), std::move(bad)});
  }
  return pairs;
}

}  // namespace pc::corpus
