// Tests of the synthetic agreement corpus (train/grammar.h, train/corpus*.h): the grammar tables,
// the portable RNG, determinism and streams, the minimal pairs, parse depths, files and errors.
#include <catch2/catch.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "core/error.h"
#include "core/fs.h"
#include "core/json_util.h"
#include "core/sha256.h"
#include "core/strings.h"
#include "tests/test_support.h"
#include "train/corpus.h"
#include "train/corpus_generator.h"
#include "train/corpus_pairs.h"
#include "train/grammar.h"

using Catch::Matchers::Contains;
using namespace pc::corpus;

namespace {

CorpusOptions Small(int64_t seed = 7) {
  CorpusOptions o;
  o.sentences = 3000;
  o.seed = seed;
  o.pairs_per_condition = 60;
  o.depth_samples = 100;
  return o;
}

const Corpus& SmallCorpus() {
  static const Corpus c = BuildCorpus(Small());
  return c;
}

const std::string& FileOf(const Corpus& c, const std::string& name) {
  for (const CorpusFile& f : c.files) {
    if (f.name == name) return f.bytes;
  }
  FAIL("no file " << name);
  static std::string none;
  return none;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines = pc::Split(text, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

std::vector<nlohmann::json> JsonLines(const std::string& text, const std::string& where) {
  std::vector<nlohmann::json> out;
  for (const std::string& line : Lines(text)) out.push_back(pc::ParseJson(line, where));
  return out;
}

// Surface form (lower-case) -> (entry, number) for nouns and verbs: a dictionary independent of
// the generator's own bookkeeping.
struct Dictionary {
  std::map<std::string, std::pair<uint16_t, Number>> nouns, verbs;
  Dictionary() {
    const auto& lex = Lexicon();
    for (size_t i = 0; i < lex.size(); ++i) {
      auto* table = lex[i].cls == Sym::kNoun ? &nouns : IsVerbClass(lex[i].cls) ? &verbs : nullptr;
      if (table == nullptr) continue;
      (*table)[lex[i].sg] = {static_cast<uint16_t>(i), Number::kSg};
      (*table)[lex[i].pl] = {static_cast<uint16_t>(i), Number::kPl};
    }
  }
};

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// True when the node or one of its ancestors is one of `syms`.
bool UnderAny(const Sentence& s, int node, std::initializer_list<Sym> syms) {
  for (int n = node; n >= 0; n = s.nodes[n].parent) {
    for (Sym x : syms) {
      if (s.nodes[n].sym == x) return true;
    }
  }
  return false;
}

}  // namespace

TEST_CASE("corpus lexicon: one word class per form, distinct numbers, a word for every context", "[corpus]") {
  const auto& lex = Lexicon();
  // Groups of classes that may share a form (the complementizer and the relative pronoun "that";
  // the conjunctions). Any other shared form would make the parse ambiguous.
  auto group = [](Sym c) -> std::string {
    if (IsVerbClass(c)) return "verb";
    if (c == Sym::kRel || c == Sym::kComp) return "that";
    if (c == Sym::kConjNP || c == Sym::kConjVP || c == Sym::kConjS) return "conj";
    return SymName(c);
  };
  std::map<std::string, std::string> owner;
  for (const LexEntry& e : lex) {
    for (const char* f : {e.sg, e.pl, e.before_vowel}) {
      if (f == nullptr) continue;
      auto [it, fresh] = owner.emplace(f, group(e.cls));
      INFO("form '" << f << "'");
      CHECK(it->second == group(e.cls));
    }
    if (e.cls == Sym::kNoun || IsVerbClass(e.cls)) {
      REQUIRE(e.sg != nullptr);
      REQUIRE(e.pl != nullptr);
      INFO(e.sg);
      CHECK(std::string(e.sg) != e.pl);
    }
  }
  CHECK(owner.size() >= 300);
  CHECK(owner.size() <= 800);

  for (uint8_t subj : {kMaskAnimate, kMaskInanimate}) {
    for (Sym cls : {Sym::kNoun, Sym::kAdj, Sym::kVerbIntr, Sym::kVerbTr, Sym::kCopula, Sym::kRel}) {
      bool found = false;
      for (uint16_t e : EntriesOf(cls)) found |= cls == Sym::kNoun ? lex[e].mask == subj : (lex[e].mask & subj) != 0;
      INFO(SymName(cls) << " for mask " << int(subj));
      CHECK(found);
    }
    for (uint8_t obj : {kMaskAnimate, kMaskInanimate}) {  // object relatives need every combination
      bool found = false;
      for (uint16_t e : EntriesOf(Sym::kVerbTr)) found |= (lex[e].mask & subj) && (lex[e].obj_mask & obj);
      CHECK(found);
    }
  }
  bool sentential = false;
  for (uint16_t e : EntriesOf(Sym::kVerbSent)) sentential |= (lex[e].mask & kMaskAnimate) != 0;
  CHECK(sentential);

  // Every phrase can end the recursion: a non-recursive rule fits every context.
  for (int s = 0; s < static_cast<int>(Sym::kDet); ++s) {
    for (bool plural : {false, true}) {
      for (bool animate : {false, true}) {
        bool found = false;
        for (uint8_t id : RulesOf(static_cast<Sym>(s))) {
          const Rule& r = Rules()[id];
          found |= !r.recursive && (r.condition != Condition::kPlural || plural) &&
                   (r.condition != Condition::kAnimate || animate);
        }
        INFO(SymName(static_cast<Sym>(s)));
        CHECK(found);
      }
    }
  }
}

TEST_CASE("corpus rng: the engine is the standard mt19937_64 and the draws are our own", "[corpus]") {
  Rng std_seed(5489u);
  uint64_t x = 0;
  for (int i = 0; i < 10000; ++i) x = std_seed.Next();
  CHECK(x == 9981545732273789042ull);  // [rand.predef]: the 10000th output for the default seed

  CHECK(SplitMix64(0) == 0xE220A8397B1DCDAFull);
  CHECK(StreamSeed(0, Stream::kTrain) != StreamSeed(0, Stream::kValid));
  CHECK(StreamSeed(0, Stream::kTrain) != StreamSeed(1, Stream::kTrain));

  Rng rng(1);
  std::vector<int> counts(7, 0);
  for (int i = 0; i < 70000; ++i) ++counts[rng.Below(7)];
  for (int c : counts) CHECK(std::abs(c - 10000) < 500);
  double w[4] = {0.0, 1.0, 0.0, 3.0};
  std::vector<int> picks(4, 0);
  for (int i = 0; i < 40000; ++i) ++picks[rng.Categorical(w, 4)];
  CHECK(picks[0] == 0);
  CHECK(picks[2] == 0);
  CHECK(std::abs(picks[3] - 30000) < 600);
  for (int i = 0; i < 1000; ++i) {
    double u = rng.Uniform();
    CHECK((u >= 0.0 && u < 1.0));
  }
}

TEST_CASE("corpus generator: golden sentences for seed 0 (bump kGeneratorVersion when they change)", "[corpus]") {
  Generator gen(StreamSeed(0, Stream::kTrain));
  Sentence s;
  std::vector<std::string> first;
  for (int i = 0; i < 3; ++i) {
    gen.Next(&s);
    first.push_back(Render(s));
  }
  CHECK(kGeneratorVersion == 2);
  CHECK(first[0] == "This island stays and rattles outside.");
  CHECK(first[1] == "These cats were on this snake but meet the thief.");
  CHECK(first[2] == "Two birds that a dry box blocks are yellow.");
}

TEST_CASE("corpus generator: agreement holds in every dependency and the tree is consistent", "[corpus]") {
  Generator gen(StreamSeed(3, Stream::kTrain));
  Sentence s;
  int coordinated = 0, with_attractors = 0;
  for (int i = 0; i < 5000; ++i) {
    gen.Next(&s);
    REQUIRE(s.words.size() >= 3);
    REQUIRE(static_cast<int>(s.words.size()) <= kGrammar.max_words);
    REQUIRE(MainAgreement(s) != nullptr);
    int mains = 0;
    for (const Agreement& a : s.agreements) {
      mains += a.main;
      REQUIRE(a.subject < a.verb);
      const Word& subj = s.words[a.subject];
      const Word& verb = s.words[a.verb];
      REQUIRE(Lexicon()[subj.entry].cls == Sym::kNoun);
      REQUIRE(IsVerbClass(Lexicon()[verb.entry].cls));
      CHECK(verb.num == a.num);
      if (a.coordinated) {
        CHECK(a.num == Number::kPl);
        ++coordinated;
      } else {
        CHECK(subj.num == a.num);
      }
      with_attractors += Attractors(s, a) > 0;
    }
    CHECK(mains == 1);
    // Every verb agrees with exactly one subject.
    int verbs = 0;
    for (const Word& w : s.words) verbs += IsVerbClass(Lexicon()[w.entry].cls);
    CHECK(verbs == static_cast<int>(s.agreements.size()));
    // Words sit at their parent node's depth; nodes nest.
    for (const Word& w : s.words) CHECK(w.depth == s.nodes[w.node].depth);
    CHECK(s.nodes[0].first == 0);
    CHECK(s.nodes[0].end == static_cast<int>(s.words.size()));
    for (size_t n = 1; n < s.nodes.size(); ++n) {
      const Node& c = s.nodes[n];
      const Node& p = s.nodes[c.parent];
      CHECK(c.depth == p.depth + 1);
      CHECK((c.first >= p.first && c.end <= p.end && c.first < c.end));
    }
  }
  CHECK(coordinated > 0);
  CHECK(with_attractors > 0);
}

TEST_CASE("corpus depth: main-clause verbs are shallower than embedded verbs", "[corpus]") {
  Generator gen(StreamSeed(11, Stream::kValid));
  Sentence s;
  int embedded = 0, plain_main = 0;
  for (int i = 0; i < 5000; ++i) {
    gen.Next(&s);
    const Agreement* main = MainAgreement(s);
    const Word& verb = s.words[main->verb];
    // The main verb sits below the root S and its VP, plus one level per coordination above it.
    int coordinations = 0;
    for (int n = verb.node; n >= 0; n = s.nodes[n].parent) {
      const std::string rule = Rules()[s.nodes[n].rule].name;
      coordinations += rule == "clause_coordination" || rule == "vp_coordination";
    }
    CHECK(verb.depth == 2 + coordinations);
    if (coordinations > 0) continue;
    ++plain_main;
    // Verbs inside relative and complement clauses are deeper: S > NP > RC > VP > V at least.
    for (const Agreement& a : s.agreements) {
      if (&a == main) continue;
      const Word& w = s.words[a.verb];
      CHECK(UnderAny(s, w.node, {Sym::kRC, Sym::kCP, Sym::kSGap}));
      CHECK(w.depth >= 4);
      CHECK(w.depth > verb.depth);
      ++embedded;
    }
  }
  CHECK(plain_main > 1000);
  CHECK(embedded > 100);

  // A known parse: "The dog runs." is (S (NP (Det The) (N dog)) (VP (V_intr runs))).
  Sentence simple;
  const auto& lex = Lexicon();
  auto find = [&](Sym cls, const std::string& form) {
    for (uint16_t e : EntriesOf(cls)) {
      if (lex[e].sg != nullptr && form == lex[e].sg) return e;
    }
    FAIL("no " << form);
    return uint16_t{0};
  };
  simple.nodes = {{Sym::kS, 0, -1, 1, 0, 3}, {Sym::kNP, 2, 0, 2, 0, 2}, {Sym::kVP, 7, 0, 2, 2, 3}};
  simple.words = {{find(Sym::kDet, "the"), Number::kSg, 2, 1}, {find(Sym::kNoun, "dog"), Number::kSg, 2, 1},
                  {find(Sym::kVerbIntr, "runs"), Number::kSg, 2, 2}};
  CHECK(Render(simple) == "The dog runs.");
  CHECK(RenderTree(simple) == "(S (NP (Det The) (N dog)) (VP (V_intr runs)))");
}

TEST_CASE("corpus: same seed gives the same bytes, another seed other bytes", "[corpus]") {
  const Corpus& a = SmallCorpus();
  Corpus b = BuildCorpus(Small());
  REQUIRE(a.files.size() == b.files.size());
  REQUIRE(a.files.size() == 7);
  for (size_t i = 0; i < a.files.size(); ++i) {
    INFO(a.files[i].name);
    CHECK(a.files[i].name == b.files[i].name);
    CHECK(a.files[i].bytes == b.files[i].bytes);
  }
  Corpus c = BuildCorpus(Small(8));
  for (const char* name : {"train.txt", "valid.txt", "pairs/agreement_0_attractors.jsonl",
                           "pairs/agreement_2_attractors.jsonl", "depths.jsonl", "corpus.json"}) {
    INFO(name);
    CHECK(FileOf(a, name) != FileOf(c, name));
  }
}

TEST_CASE("corpus: train and valid come from disjoint, prefix-stable seed streams", "[corpus]") {
  CorpusOptions o = Small();
  o.sentences = 400;
  o.valid_sentences = 50;
  o.pairs_per_condition = 5;
  Corpus small = BuildCorpus(o);
  o.sentences = 800;
  Corpus large = BuildCorpus(o);
  const auto train_small = Lines(FileOf(small, "train.txt"));
  const auto train_large = Lines(FileOf(large, "train.txt"));
  REQUIRE(train_small.size() == 400);
  REQUIRE(train_large.size() == 800);
  CHECK(std::equal(train_small.begin(), train_small.end(), train_large.begin()));  // a prefix
  // valid.txt does not depend on how much train.txt holds: its own stream.
  CHECK(FileOf(small, "valid.txt") == FileOf(large, "valid.txt"));
  const auto valid = Lines(FileOf(small, "valid.txt"));
  REQUIRE(valid.size() == 50);
  Generator gen(StreamSeed(o.seed, Stream::kValid));
  Sentence s;
  for (const std::string& line : valid) {
    gen.Next(&s);
    CHECK(Render(s) == line);
  }
  // The two streams differ (short sentences may coincide now and then, whole runs do not).
  int same_position = 0;
  for (size_t i = 0; i < valid.size(); ++i) same_position += valid[i] == train_small[i];
  CHECK(same_position < 5);
  // The default valid size is a tenth of train.
  CorpusOptions d;
  d.sentences = 95;
  CHECK(d.ValidCount() == 9);
  d.sentences = 5;
  CHECK(d.ValidCount() == 1);
}

TEST_CASE("corpus pairs: BLiMP fields, and good and bad differ only in the agreeing verb's number", "[corpus]") {
  const Corpus& c = SmallCorpus();
  const Dictionary dict;
  std::set<std::string> goods;
  for (const PairCondition& cond : PairConditions()) {
    const std::string file = pc::Str("pairs/", cond.uid, ".jsonl");
    const auto pairs = JsonLines(FileOf(c, file), file);
    REQUIRE(pairs.size() == 60);
    for (size_t i = 0; i < pairs.size(); ++i) {
      const auto& p = pairs[i];
      const std::string good = p["sentence_good"], bad = p["sentence_bad"];
      INFO(good << " / " << bad);
      CHECK(p["UID"] == cond.uid);
      CHECK(p["linguistics_term"] == "subject_verb_agreement");
      CHECK(p["field"] == "morphology");
      CHECK(p["pairID"] == std::to_string(i));
      CHECK(p["attractors"] == cond.attractors);
      CHECK(goods.insert(good).second);  // no pair twice, in any file
      REQUIRE(pc::EndsWith(good, "."));
      REQUIRE(pc::EndsWith(bad, "."));
      const auto gw = pc::Split(good.substr(0, good.size() - 1), ' ');
      const auto bw = pc::Split(bad.substr(0, bad.size() - 1), ' ');
      REQUIRE(gw.size() == bw.size());
      const int verb = p["verb_index"];
      int differing = 0;
      for (size_t w = 0; w < gw.size(); ++w) differing += gw[w] != bw[w];
      CHECK(differing == 1);
      REQUIRE(gw[verb] != bw[verb]);
      const auto g = dict.verbs.at(gw[verb]);
      const auto b = dict.verbs.at(bw[verb]);
      CHECK(g.first == b.first);    // the same verb
      CHECK(g.second != b.second);  // in the other number
      CHECK(p["one_prefix_word_good"] == gw[verb]);
      CHECK(p["one_prefix_word_bad"] == bw[verb]);
      CHECK(pc::StartsWith(good, p["one_prefix_prefix"].get<std::string>() + " " + gw[verb]));
      // The verb's number is the subject's.
      const int subject = p["subject_index"];
      const auto subj = dict.nouns.at(Lower(gw[subject]));
      CHECK(g.second == subj.second);
      CHECK(p["subject_number"] == (subj.second == Number::kSg ? "sg" : "pl"));
    }
  }
}

TEST_CASE("corpus pairs: no good or bad sentence occurs in train.txt", "[corpus]") {
  // A larger train set of short sentences makes collisions certain, so the redraw path runs.
  CorpusOptions o = Small(5);
  o.sentences = 40000;
  o.pairs_per_condition = 200;
  Corpus c = BuildCorpus(o);
  const auto train = Lines(FileOf(c, "train.txt"));
  const std::set<std::string> train_set(train.begin(), train.end());
  for (const PairCondition& cond : PairConditions()) {
    const std::string file = pc::Str("pairs/", cond.uid, ".jsonl");
    for (const auto& p : JsonLines(FileOf(c, file), file)) {
      CHECK(train_set.count(p["sentence_good"].get<std::string>()) == 0);
      CHECK(train_set.count(p["sentence_bad"].get<std::string>()) == 0);
    }
  }
  const auto& conds = c.manifest["pairs"]["conditions"];
  CHECK(conds["agreement_0_attractors"]["regenerated_in_train"].get<int64_t>() > 0);
  for (const PairCondition& cond : PairConditions()) CHECK(conds[cond.uid]["pairs"] == 200);
}

TEST_CASE("corpus pairs: every file holds exactly its number of attractors (checked on the parse)", "[corpus]") {
  SentenceSet train, used;
  const Dictionary dict;
  for (const PairCondition& cond : PairConditions()) {
    PairStats stats;
    const auto pairs = MakePairs(9, cond, 150, train, &used, &stats, 10000000);
    REQUIRE(pairs.size() == 150);
    CHECK(stats.draws >= 150);
    for (const Pair& p : pairs) {
      const Agreement& a = p.parse.agreements[p.agreement];
      INFO(p.good);
      CHECK(a.main);
      CHECK(!a.coordinated);
      // Recount from the parse: nouns strictly between subject and verb, of the other number.
      int attractors = 0;
      for (int i = a.subject + 1; i < a.verb; ++i) {
        const Word& w = p.parse.words[i];
        attractors += Lexicon()[w.entry].cls == Sym::kNoun && w.num != p.parse.words[a.subject].num;
        CHECK(Lexicon()[w.entry].cls != Sym::kConjNP);
      }
      CHECK(attractors == cond.attractors);
      CHECK(p.good == Render(p.parse));
      CHECK(p.bad == Render(FlipVerb(p.parse, a)));
    }
  }
  // And from the written file alone, with the lexicon as a dictionary.
  const Corpus& c = SmallCorpus();
  for (const PairCondition& cond : PairConditions()) {
    const std::string file = pc::Str("pairs/", cond.uid, ".jsonl");
    for (const auto& p : JsonLines(FileOf(c, file), file)) {
      const std::string good = p["sentence_good"];
      const auto words = pc::Split(good.substr(0, good.size() - 1), ' ');
      const int subject = p["subject_index"], verb = p["verb_index"];
      const Number num = dict.nouns.at(Lower(words[subject])).second;
      int attractors = 0, nouns = 0;
      for (int i = subject + 1; i < verb; ++i) {
        auto it = dict.nouns.find(words[i]);
        if (it == dict.nouns.end()) continue;
        ++nouns;
        attractors += it->second.second != num;
      }
      INFO(good);
      CHECK(attractors == cond.attractors);
      CHECK(nouns == p["intervening_nouns"]);
      CHECK(p["dependency_length"] == verb - subject);
    }
  }
}

TEST_CASE("corpus depths.jsonl: the first valid sentences with their words, depths and dependencies", "[corpus]") {
  const Corpus& c = SmallCorpus();
  const auto records = JsonLines(FileOf(c, "depths.jsonl"), "depths.jsonl");
  const auto valid = Lines(FileOf(c, "valid.txt"));
  REQUIRE(records.size() == 100);
  Generator gen(StreamSeed(Small().seed, Stream::kValid));
  Sentence s;
  for (size_t i = 0; i < records.size(); ++i) {
    const auto& r = records[i];
    gen.Next(&s);
    CHECK(r["sentence"] == valid[i]);
    const auto words = r["words"].get<std::vector<std::string>>();
    const auto depth = r["depth"].get<std::vector<int>>();
    REQUIRE(words.size() == depth.size());
    REQUIRE(r["pos"].size() == words.size());
    CHECK(pc::Join(words, " ") + "." == valid[i]);
    for (size_t w = 0; w < words.size(); ++w) CHECK(depth[w] == s.words[w].depth);
    int mains = 0;
    for (const auto& a : r["agreements"]) {
      mains += a["main"].get<bool>();
      CHECK(a["subject"].get<int>() < a["verb"].get<int>());
    }
    CHECK(mains == 1);
    const std::string tree = r["tree"];
    CHECK(std::count(tree.begin(), tree.end(), '(') == std::count(tree.begin(), tree.end(), ')'));
  }
}

TEST_CASE("corpus manifest: counts, statistics and the sha256 of every file", "[corpus]") {
  const Corpus& c = SmallCorpus();
  const auto& m = c.manifest;
  REQUIRE(c.files.back().name == "corpus.json");
  CHECK(pc::ParseJson(c.files.back().bytes, "corpus.json") == nlohmann::json::parse(m.dump()));
  CHECK(m["generator_version"] == kGeneratorVersion);
  CHECK(m["seed"] == 7);
  for (size_t i = 0; i + 1 < c.files.size(); ++i) {
    INFO(c.files[i].name);
    CHECK(m["files"][c.files[i].name]["sha256"] == pc::Sha256Hex(c.files[i].bytes));
    CHECK(m["files"][c.files[i].name]["bytes"] == c.files[i].bytes.size());
  }
  CHECK(m["counts"]["train_sentences"] == 3000);
  CHECK(m["counts"]["valid_sentences"] == 300);
  CHECK(Lines(FileOf(c, "train.txt")).size() == 3000);
  CHECK(Lines(FileOf(c, "valid.txt")).size() == 300);
  const double mean = m["sentence_length"]["mean_words"];
  CHECK((mean > 6 && mean < 14));
  CHECK(m["sentence_length"]["share_5_to_25_words"].get<double>() > 0.75);
  const int64_t vocab = m["vocabulary"]["train_distinct_words"];
  CHECK((vocab > 200 && vocab < 1000));
  const auto& att = m["attractor_statistics"]["main_dependency_attractors"];
  CHECK(att["0"].get<int64_t>() > att["1"].get<int64_t>());
  CHECK(att["1"].get<int64_t>() > att["2"].get<int64_t>());
  CHECK(att["2"].get<int64_t>() > 0);
}

TEST_CASE("corpus: written as a staged folder, error paths name the option", "[corpus]") {
  CorpusOptions bad;
  bad.sentences = 0;
  CHECK_THROWS_WITH(bad.Validate(), Contains("--sentences must be between 1") && Contains("got 0"));
  bad = CorpusOptions();
  bad.pairs_per_condition = 0;
  CHECK_THROWS_WITH(bad.Validate(), Contains("--pairs-per-condition"));
  bad = CorpusOptions();
  bad.seed = -1;
  CHECK_THROWS_WITH(bad.Validate(), Contains("--seed must be >= 0"));
  bad = CorpusOptions();
  bad.valid_sentences = -3;
  CHECK_THROWS_WITH(bad.Validate(), Contains("--valid-sentences"));
  bad = CorpusOptions();
  bad.depth_samples = -1;
  CHECK_THROWS_WITH(bad.Validate(), Contains("--depth-samples"));

  const std::string dir = pc::test::TempDir("corpus");
  const std::string out = dir + "/c";
  CorpusOptions o = Small();
  o.sentences = 500;
  o.pairs_per_condition = 10;
  auto m = WriteCorpus(o, out, false);
  for (const char* f : {"train.txt", "valid.txt", "pairs/agreement_0_attractors.jsonl",
                        "pairs/agreement_1_attractor.jsonl", "pairs/agreement_2_attractors.jsonl", "depths.jsonl",
                        "corpus.json"}) {
    INFO(f);
    CHECK(pc::fs::Exists(out + "/" + f));
  }
  CHECK(pc::Sha256File(out + "/train.txt") == m["files"]["train.txt"]["sha256"].get<std::string>());
  CHECK(pc::LoadJsonFile(out + "/corpus.json")["counts"]["train_sentences"] == 500);

  // An existing folder is refused without --overwrite, before any work, and left as it was.
  o.seed = 99;
  CHECK_THROWS_WITH(WriteCorpus(o, out, false), Contains("--out") && Contains("already exists") &&
                                                    Contains("--overwrite"));
  CHECK(pc::LoadJsonFile(out + "/corpus.json")["seed"] == 7);
  WriteCorpus(o, out, true);
  CHECK(pc::LoadJsonFile(out + "/corpus.json")["seed"] == 99);
  int leftovers = 0;  // no temporary folders beside it
  for (const auto& e : std::filesystem::directory_iterator(dir)) leftovers += e.path().filename() != "c";
  CHECK(leftovers == 0);

  // Bad options fail before the folder is touched.
  o.sentences = 0;
  CHECK_THROWS_WITH(WriteCorpus(o, dir + "/never", false), Contains("--sentences"));
  CHECK(!pc::fs::Exists(dir + "/never"));

  // Unwritable places: below a file, and (when not root) inside a read-only folder.
  o.sentences = 100;
  {
    std::ofstream f(dir + "/a-file");
    f << "x";
  }
  CHECK_THROWS_WITH(WriteCorpus(o, dir + "/a-file/c", false), Contains("--out") && Contains("is not a folder"));
  if (::geteuid() != 0) {
    pc::fs::MakeDirs(dir + "/ro");
    ::chmod((dir + "/ro").c_str(), 0555);
    CHECK_THROWS_WITH(WriteCorpus(o, dir + "/ro/c", false), Contains("not writable"));
    ::chmod((dir + "/ro").c_str(), 0755);
  } else {
    WARN("running as root: the read-only folder case is not checked (root may write anywhere)");
  }
}

TEST_CASE("corpus: a long stream stays well formed (speed: bench/train/corpus_bench.cc)", "[corpus]") {
  Generator gen(StreamSeed(0, Stream::kTrain));
  Sentence s;
  size_t bytes = 0, bad = 0;
  for (int i = 0; i < 200000; ++i) {
    gen.Next(&s);
    const std::string r = Render(s);
    bytes += r.size();
    bad += r.empty() || r.back() != '.' || !std::isupper(static_cast<unsigned char>(r[0]));
  }
  CHECK(bad == 0);
  CHECK(bytes > 200000 * 10);  // sentences of a few words each
}

TEST_CASE("corpus docs: docs/CORPUS.md holds the current grammar tables", "[corpus]") {
  const std::string doc = pc::fs::ReadFile(pc::test::SourceDir() + "/docs/CORPUS.md");
  CHECK_THAT(doc, Contains(DescribeGrammar()));
  CHECK_THAT(doc, Contains(DescribeLexicon()));
}
