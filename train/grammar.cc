#include "train/grammar.h"

#include <algorithm>
#include <array>
#include <cstdio>

#include "core/error.h"
#include "core/strings.h"

namespace pc::corpus {

namespace {
constexpr uint8_t kA = kMaskAnimate, kI = kMaskInanimate, kAny = kMaskAny;

LexEntry Noun(const char* sg, const char* pl, uint8_t cls) { return {Sym::kNoun, sg, pl, cls, kAny, 1.0}; }
LexEntry Verb(Sym cls, const char* sg, const char* pl, uint8_t subj, uint8_t obj = kAny, double w = 1.0) {
  return {cls, sg, pl, subj, obj, w};
}
LexEntry Word(Sym cls, const char* form, uint8_t mask = kAny, double w = 1.0) {
  return {cls, form, form, mask, kAny, w};
}

std::vector<LexEntry> BuildLexicon() {
  std::vector<LexEntry> v = {
      // ---- determiners: number-specific except "the" ----------------------------------------
      {Sym::kDet, "the", "the", kAny, kAny, 10.0},
      {Sym::kDet, "a", nullptr, kAny, kAny, 5.0, "an"},
      {Sym::kDet, "this", nullptr, kAny, kAny, 2.0},
      {Sym::kDet, "every", nullptr, kAny, kAny, 1.5},
      {Sym::kDet, "each", nullptr, kAny, kAny, 1.0},
      {Sym::kDet, nullptr, "some", kAny, kAny, 3.0},
      {Sym::kDet, nullptr, "these", kAny, kAny, 2.0},
      {Sym::kDet, nullptr, "those", kAny, kAny, 2.0},
      {Sym::kDet, nullptr, "many", kAny, kAny, 1.5},
      {Sym::kDet, nullptr, "two", kAny, kAny, 1.0},
      {Sym::kDet, nullptr, "three", kAny, kAny, 1.0},
      // ---- animate nouns (irregular plurals listed as such) ----------------------------------
      Noun("dog", "dogs", kA), Noun("cat", "cats", kA), Noun("bird", "birds", kA), Noun("horse", "horses", kA),
      Noun("cow", "cows", kA), Noun("fox", "foxes", kA), Noun("wolf", "wolves", kA), Noun("mouse", "mice", kA),
      Noun("goose", "geese", kA), Noun("rabbit", "rabbits", kA), Noun("bear", "bears", kA),
      Noun("lion", "lions", kA), Noun("tiger", "tigers", kA), Noun("monkey", "monkeys", kA),
      Noun("duck", "ducks", kA), Noun("frog", "frogs", kA), Noun("snake", "snakes", kA), Noun("pig", "pigs", kA),
      Noun("goat", "goats", kA), Noun("owl", "owls", kA), Noun("eagle", "eagles", kA),
      Noun("man", "men", kA), Noun("woman", "women", kA), Noun("child", "children", kA),
      Noun("person", "people", kA), Noun("boy", "boys", kA), Noun("girl", "girls", kA),
      Noun("teacher", "teachers", kA), Noun("doctor", "doctors", kA), Noun("farmer", "farmers", kA),
      Noun("student", "students", kA), Noun("king", "kings", kA), Noun("queen", "queens", kA),
      Noun("baby", "babies", kA), Noun("author", "authors", kA), Noun("pilot", "pilots", kA),
      Noun("singer", "singers", kA), Noun("painter", "painters", kA), Noun("lawyer", "lawyers", kA),
      Noun("nurse", "nurses", kA), Noun("friend", "friends", kA), Noun("neighbor", "neighbors", kA),
      Noun("soldier", "soldiers", kA), Noun("actor", "actors", kA), Noun("artist", "artists", kA),
      Noun("officer", "officers", kA), Noun("sister", "sisters", kA), Noun("brother", "brothers", kA),
      Noun("uncle", "uncles", kA), Noun("aunt", "aunts", kA), Noun("baker", "bakers", kA),
      Noun("thief", "thieves", kA), Noun("wife", "wives", kA), Noun("hero", "heroes", kA),
      // ---- inanimate nouns -------------------------------------------------------------------
      Noun("key", "keys", kI), Noun("cabinet", "cabinets", kI), Noun("box", "boxes", kI), Noun("book", "books", kI),
      Noun("table", "tables", kI), Noun("chair", "chairs", kI), Noun("door", "doors", kI),
      Noun("window", "windows", kI), Noun("house", "houses", kI), Noun("car", "cars", kI), Noun("bus", "buses", kI),
      Noun("city", "cities", kI), Noun("tree", "trees", kI), Noun("leaf", "leaves", kI), Noun("knife", "knives", kI),
      Noun("shelf", "shelves", kI), Noun("cup", "cups", kI), Noun("bottle", "bottles", kI),
      Noun("letter", "letters", kI), Noun("picture", "pictures", kI), Noun("clock", "clocks", kI),
      Noun("lamp", "lamps", kI), Noun("road", "roads", kI), Noun("bridge", "bridges", kI),
      Noun("garden", "gardens", kI), Noun("river", "rivers", kI), Noun("hill", "hills", kI),
      Noun("tooth", "teeth", kI), Noun("foot", "feet", kI), Noun("stone", "stones", kI), Noun("bag", "bags", kI),
      Noun("coat", "coats", kI), Noun("hat", "hats", kI), Noun("ball", "balls", kI), Noun("toy", "toys", kI),
      Noun("apple", "apples", kI), Noun("egg", "eggs", kI), Noun("island", "islands", kI),
      Noun("umbrella", "umbrellas", kI), Noun("map", "maps", kI), Noun("boat", "boats", kI),
      Noun("wall", "walls", kI), Noun("field", "fields", kI), Noun("village", "villages", kI),
      Noun("forest", "forests", kI), Noun("kitchen", "kitchens", kI), Noun("library", "libraries", kI),
      Noun("pencil", "pencils", kI), Noun("basket", "baskets", kI), Noun("candle", "candles", kI),
      Noun("church", "churches", kI), Noun("potato", "potatoes", kI), Noun("loaf", "loaves", kI),
      // ---- intransitive verbs: subject class --------------------------------------------------
      Verb(Sym::kVerbIntr, "runs", "run", kA), Verb(Sym::kVerbIntr, "sleeps", "sleep", kA),
      Verb(Sym::kVerbIntr, "walks", "walk", kA), Verb(Sym::kVerbIntr, "smiles", "smile", kA),
      Verb(Sym::kVerbIntr, "laughs", "laugh", kA), Verb(Sym::kVerbIntr, "sings", "sing", kA),
      Verb(Sym::kVerbIntr, "swims", "swim", kA), Verb(Sym::kVerbIntr, "waits", "wait", kA),
      Verb(Sym::kVerbIntr, "jumps", "jump", kA), Verb(Sym::kVerbIntr, "cries", "cry", kA),
      Verb(Sym::kVerbIntr, "dances", "dance", kA), Verb(Sym::kVerbIntr, "works", "work", kA),
      Verb(Sym::kVerbIntr, "rests", "rest", kA), Verb(Sym::kVerbIntr, "shouts", "shout", kA),
      Verb(Sym::kVerbIntr, "listens", "listen", kA), Verb(Sym::kVerbIntr, "hides", "hide", kA),
      Verb(Sym::kVerbIntr, "wins", "win", kA), Verb(Sym::kVerbIntr, "eats", "eat", kA),
      Verb(Sym::kVerbIntr, "plays", "play", kA), Verb(Sym::kVerbIntr, "studies", "study", kA),
      Verb(Sym::kVerbIntr, "complains", "complain", kA), Verb(Sym::kVerbIntr, "sneezes", "sneeze", kA),
      Verb(Sym::kVerbIntr, "worries", "worry", kA), Verb(Sym::kVerbIntr, "goes", "go", kA),
      Verb(Sym::kVerbIntr, "falls", "fall", kAny), Verb(Sym::kVerbIntr, "moves", "move", kAny),
      Verb(Sym::kVerbIntr, "stays", "stay", kAny), Verb(Sym::kVerbIntr, "disappears", "disappear", kAny),
      Verb(Sym::kVerbIntr, "appears", "appear", kAny), Verb(Sym::kVerbIntr, "remains", "remain", kAny),
      Verb(Sym::kVerbIntr, "shines", "shine", kI), Verb(Sym::kVerbIntr, "breaks", "break", kI),
      Verb(Sym::kVerbIntr, "rolls", "roll", kI), Verb(Sym::kVerbIntr, "rattles", "rattle", kI),
      Verb(Sym::kVerbIntr, "glows", "glow", kI), Verb(Sym::kVerbIntr, "squeaks", "squeak", kI),
      // ---- transitive verbs: subject class, object class --------------------------------------
      Verb(Sym::kVerbTr, "sees", "see", kA, kAny), Verb(Sym::kVerbTr, "finds", "find", kA, kAny),
      Verb(Sym::kVerbTr, "likes", "like", kA, kAny), Verb(Sym::kVerbTr, "wants", "want", kA, kAny),
      Verb(Sym::kVerbTr, "needs", "need", kA, kAny), Verb(Sym::kVerbTr, "remembers", "remember", kA, kAny),
      Verb(Sym::kVerbTr, "watches", "watch", kA, kAny), Verb(Sym::kVerbTr, "loves", "love", kA, kAny),
      Verb(Sym::kVerbTr, "hates", "hate", kA, kAny), Verb(Sym::kVerbTr, "describes", "describe", kA, kAny),
      Verb(Sym::kVerbTr, "chases", "chase", kA, kA), Verb(Sym::kVerbTr, "follows", "follow", kA, kA),
      Verb(Sym::kVerbTr, "helps", "help", kA, kA), Verb(Sym::kVerbTr, "visits", "visit", kA, kA),
      Verb(Sym::kVerbTr, "meets", "meet", kA, kA), Verb(Sym::kVerbTr, "greets", "greet", kA, kA),
      Verb(Sym::kVerbTr, "admires", "admire", kA, kA), Verb(Sym::kVerbTr, "calls", "call", kA, kA),
      Verb(Sym::kVerbTr, "thanks", "thank", kA, kA), Verb(Sym::kVerbTr, "teaches", "teach", kA, kA),
      Verb(Sym::kVerbTr, "carries", "carry", kA, kI), Verb(Sym::kVerbTr, "buys", "buy", kA, kI),
      Verb(Sym::kVerbTr, "sells", "sell", kA, kI), Verb(Sym::kVerbTr, "fixes", "fix", kA, kI),
      Verb(Sym::kVerbTr, "holds", "hold", kA, kI), Verb(Sym::kVerbTr, "drops", "drop", kA, kI),
      Verb(Sym::kVerbTr, "reads", "read", kA, kI), Verb(Sym::kVerbTr, "writes", "write", kA, kI),
      Verb(Sym::kVerbTr, "paints", "paint", kA, kI), Verb(Sym::kVerbTr, "opens", "open", kA, kI),
      Verb(Sym::kVerbTr, "closes", "close", kA, kI), Verb(Sym::kVerbTr, "washes", "wash", kA, kI),
      Verb(Sym::kVerbTr, "hits", "hit", kI, kAny), Verb(Sym::kVerbTr, "blocks", "block", kI, kAny),
      Verb(Sym::kVerbTr, "covers", "cover", kI, kAny), Verb(Sym::kVerbTr, "touches", "touch", kI, kAny),
      Verb(Sym::kVerbTr, "contains", "contain", kI, kI), Verb(Sym::kVerbTr, "has", "have", kAny, kAny, 2.0),
      // ---- copula and verbs with a complement clause -----------------------------------------
      Verb(Sym::kCopula, "is", "are", kAny, kAny, 7.0), Verb(Sym::kCopula, "was", "were", kAny, kAny, 3.0),
      Verb(Sym::kVerbSent, "thinks", "think", kA), Verb(Sym::kVerbSent, "says", "say", kA),
      Verb(Sym::kVerbSent, "knows", "know", kA), Verb(Sym::kVerbSent, "believes", "believe", kA),
      Verb(Sym::kVerbSent, "hopes", "hope", kA), Verb(Sym::kVerbSent, "hears", "hear", kA),
      Verb(Sym::kVerbSent, "notices", "notice", kA), Verb(Sym::kVerbSent, "forgets", "forget", kA),
      Verb(Sym::kVerbSent, "claims", "claim", kA), Verb(Sym::kVerbSent, "feels", "feel", kA),
      // ---- adjectives: the noun classes they modify ------------------------------------------
      Word(Sym::kAdj, "old"), Word(Sym::kAdj, "new"), Word(Sym::kAdj, "big"), Word(Sym::kAdj, "small"),
      Word(Sym::kAdj, "strange"), Word(Sym::kAdj, "famous"), Word(Sym::kAdj, "red"), Word(Sym::kAdj, "blue"),
      Word(Sym::kAdj, "green"), Word(Sym::kAdj, "yellow"), Word(Sym::kAdj, "dark"), Word(Sym::kAdj, "tall"),
      Word(Sym::kAdj, "little"), Word(Sym::kAdj, "ancient"), Word(Sym::kAdj, "ugly"), Word(Sym::kAdj, "wet"),
      Word(Sym::kAdj, "young", kA), Word(Sym::kAdj, "happy", kA), Word(Sym::kAdj, "sad", kA),
      Word(Sym::kAdj, "hungry", kA), Word(Sym::kAdj, "tired", kA), Word(Sym::kAdj, "angry", kA),
      Word(Sym::kAdj, "clever", kA), Word(Sym::kAdj, "brave", kA), Word(Sym::kAdj, "lazy", kA),
      Word(Sym::kAdj, "proud", kA), Word(Sym::kAdj, "friendly", kA), Word(Sym::kAdj, "kind", kA),
      Word(Sym::kAdj, "busy", kA), Word(Sym::kAdj, "calm", kA), Word(Sym::kAdj, "gentle", kA),
      Word(Sym::kAdj, "wild", kA), Word(Sym::kAdj, "heavy", kI), Word(Sym::kAdj, "empty", kI),
      Word(Sym::kAdj, "bright", kI), Word(Sym::kAdj, "narrow", kI), Word(Sym::kAdj, "wide", kI),
      Word(Sym::kAdj, "broken", kI), Word(Sym::kAdj, "dry", kI),
      // ---- adverbs, prepositions, function words ---------------------------------------------
      Word(Sym::kDeg, "very", kAny, 3.0), Word(Sym::kDeg, "quite"), Word(Sym::kDeg, "rather"),
      Word(Sym::kDeg, "really"), Word(Sym::kDeg, "too"),
      Word(Sym::kAdv, "quickly"), Word(Sym::kAdv, "slowly"), Word(Sym::kAdv, "often"), Word(Sym::kAdv, "again"),
      Word(Sym::kAdv, "today"), Word(Sym::kAdv, "now"), Word(Sym::kAdv, "outside"), Word(Sym::kAdv, "alone"),
      Word(Sym::kAdv, "loudly"), Word(Sym::kAdv, "quietly"), Word(Sym::kAdv, "here"), Word(Sym::kAdv, "late"),
      Word(Sym::kPrep, "to"), Word(Sym::kPrep, "near"), Word(Sym::kPrep, "with"), Word(Sym::kPrep, "behind"),
      Word(Sym::kPrep, "beside"), Word(Sym::kPrep, "under"), Word(Sym::kPrep, "above"), Word(Sym::kPrep, "from"),
      Word(Sym::kPrep, "for"), Word(Sym::kPrep, "on"), Word(Sym::kPrep, "in"), Word(Sym::kPrep, "by"),
      Word(Sym::kPrep, "without"), Word(Sym::kPrep, "of"),
      Word(Sym::kRel, "that", kAny, 2.0), Word(Sym::kRel, "who", kA, 1.0),
      Word(Sym::kComp, "that"),
      Word(Sym::kConjNP, "and"),
      Word(Sym::kConjVP, "and", kAny, 3.0), Word(Sym::kConjVP, "or"), Word(Sym::kConjVP, "but"),
      Word(Sym::kConjS, "and", kAny, 3.0), Word(Sym::kConjS, "but", kAny, 2.0), Word(Sym::kConjS, "while"),
      Word(Sym::kConjS, "because"),
  };
  PC_ASSERT(v.size() < 65535, "lexicon too large for uint16 ids");
  return v;
}

// Item shorthands for the rule table.
Item I(Sym s, uint8_t flags = 0) { return {s, NumSpec::kSame, AnimSpec::kSame, flags}; }
Item Fresh(Sym s, uint8_t flags = 0) { return {s, NumSpec::kFree, AnimSpec::kFree, flags}; }  // own number, animacy
Item FreeNum(Sym s, uint8_t flags = 0) { return {s, NumSpec::kFree, AnimSpec::kSame, flags}; }
Item Object(Sym s) { return {s, NumSpec::kFree, AnimSpec::kVerbObject, 0}; }

std::vector<Rule> BuildRules() {
  using S = Sym;
  constexpr uint8_t kVerb = kAgrees | kMain;
  constexpr Condition kNone = Condition::kNone;
  return {
      // Clauses. The clause's number and animacy are its subject's.
      {"clause", S::kS, 0.88, false, kNone, false, {I(S::kNP, kControls), I(S::kVP, kMain)}},
      {"clause_coordination", S::kS, 0.12, true, kNone, false,
       {Fresh(S::kS, kMain), I(S::kConjS), Fresh(S::kS)}},
      // Noun phrases.
      {"np", S::kNP, 0.30, false, kNone, false, {I(S::kDet), I(S::kNoun, kHead)}},
      {"np_adjective", S::kNP, 0.18, false, kNone, false, {I(S::kDet), I(S::kAdj), I(S::kNoun, kHead)}},
      {"np_pp", S::kNP, 0.26, true, kNone, false, {I(S::kDet), I(S::kNoun, kHead), I(S::kPP)}},
      {"np_relative", S::kNP, 0.20, true, kNone, false, {I(S::kDet), I(S::kNoun, kHead | kControls), I(S::kRC)}},
      {"np_coordination", S::kNP, 0.06, true, Condition::kPlural, true,
       {FreeNum(S::kNP), I(S::kConjNP), FreeNum(S::kNP, kHead)}},
      // Verb phrases: the verb agrees with the controlling subject.
      {"intransitive", S::kVP, 0.14, false, kNone, false, {I(S::kVerbIntr, kVerb)}},
      {"intransitive_adverb", S::kVP, 0.08, false, kNone, false, {I(S::kVerbIntr, kVerb), I(S::kAdv)}},
      {"intransitive_pp", S::kVP, 0.10, false, kNone, false, {I(S::kVerbIntr, kVerb), I(S::kPP)}},
      {"transitive", S::kVP, 0.32, false, kNone, false, {I(S::kVerbTr, kVerb), Object(S::kNP)}},
      {"copula_adjective", S::kVP, 0.07, false, kNone, false, {I(S::kCopula, kVerb), I(S::kAdj)}},
      {"copula_degree_adjective", S::kVP, 0.05, false, kNone, false,
       {I(S::kCopula, kVerb), I(S::kDeg), I(S::kAdj)}},
      {"copula_pp", S::kVP, 0.06, false, kNone, false, {I(S::kCopula, kVerb), I(S::kPP)}},
      {"complement_clause", S::kVP, 0.08, true, Condition::kAnimate, false, {I(S::kVerbSent, kVerb), I(S::kCP)}},
      {"vp_coordination", S::kVP, 0.10, true, kNone, false, {I(S::kVP, kMain), I(S::kConjVP), I(S::kVP)}},
      // Modifiers and embedded clauses.
      {"pp", S::kPP, 1.0, false, kNone, false, {I(S::kPrep), Fresh(S::kNP)}},
      {"subject_relative", S::kRC, 0.6, false, kNone, false, {I(S::kRel), I(S::kVP)}},
      {"object_relative", S::kRC, 0.4, false, kNone, false, {I(S::kRel), Fresh(S::kSGap, kSetsGap)}},
      {"complement", S::kCP, 1.0, false, kNone, false, {I(S::kComp), Fresh(S::kS)}},
      {"gapped_clause", S::kSGap, 1.0, false, kNone, false, {I(S::kNP, kControls), I(S::kVPGap, kKeepsGap)}},
      {"gapped_transitive", S::kVPGap, 1.0, false, kNone, false, {I(S::kVerbTr, kAgrees | kKeepsGap)}},
  };
}

constexpr size_t kSymCount = static_cast<size_t>(Sym::kCount);

std::string FormatProb(double p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", p);
  return buf;
}

std::string ItemText(const Item& it) {
  std::string s = SymName(it.sym);
  std::vector<std::string> notes;
  if (it.num == NumSpec::kFree) notes.push_back("own number");
  if (it.anim == AnimSpec::kFree) notes.push_back("own animacy");
  if (it.anim == AnimSpec::kVerbObject) notes.push_back("verb's object class");
  if (it.flags & kHead) notes.push_back("head");
  if (it.flags & kControls) notes.push_back("controller");
  if (it.flags & kAgrees) notes.push_back("agrees");
  if (it.flags & kSetsGap) notes.push_back("object gap");
  if (!notes.empty()) s += "[" + Join(notes, ", ") + "]";
  return s;
}
}  // namespace

const char* SymName(Sym s) {
  static const std::array<const char*, kSymCount> names = {
      "S", "NP", "VP", "PP", "RC", "CP", "S_gap", "VP_gap", "Det", "N", "Adj", "Deg", "Adv", "V_intr", "V_tr",
      "Cop", "V_sent", "P", "Rel", "Comp", "Conj_np", "Conj_vp", "Conj_s"};
  return names[static_cast<size_t>(s)];
}

const std::vector<LexEntry>& Lexicon() {
  static const std::vector<LexEntry> lexicon = BuildLexicon();
  return lexicon;
}

const std::vector<uint16_t>& EntriesOf(Sym cls) {
  static const auto by_class = [] {
    std::array<std::vector<uint16_t>, kSymCount> t;
    const auto& lex = Lexicon();
    for (size_t i = 0; i < lex.size(); ++i) t[static_cast<size_t>(lex[i].cls)].push_back(static_cast<uint16_t>(i));
    return t;
  }();
  return by_class[static_cast<size_t>(cls)];
}

const char* Form(uint16_t e, Number num) {
  const LexEntry& entry = Lexicon()[e];
  const char* f = num == Number::kSg ? entry.sg : entry.pl;
  PC_ASSERT(f != nullptr, "lexicon entry ", e, " has no form for this number");
  return f;
}

const std::vector<Rule>& Rules() {
  static const std::vector<Rule> rules = BuildRules();
  return rules;
}

const std::vector<uint8_t>& RulesOf(Sym lhs) {
  static const auto by_lhs = [] {
    std::array<std::vector<uint8_t>, kSymCount> t;
    const auto& rules = Rules();
    PC_ASSERT(rules.size() < 256, "too many rules for uint8 ids");
    for (size_t i = 0; i < rules.size(); ++i) t[static_cast<size_t>(rules[i].lhs)].push_back(static_cast<uint8_t>(i));
    return t;
  }();
  return by_lhs[static_cast<size_t>(lhs)];
}

std::string DescribeGrammar() {
  std::string out;
  out += "| symbol | rule | expansion | p (level 0) | recursive | condition |\n";
  out += "|---|---|---|---|---|---|\n";
  const auto& rules = Rules();
  for (size_t s = 0; s < static_cast<size_t>(Sym::kDet); ++s) {
    const auto& ids = RulesOf(static_cast<Sym>(s));
    double total = 0;
    for (uint8_t id : ids) total += rules[id].weight;
    for (uint8_t id : ids) {
      const Rule& r = rules[id];
      std::vector<std::string> items;
      for (const Item& it : r.rhs) items.push_back(ItemText(it));
      const char* cond = r.condition == Condition::kPlural ? "plural NP" : r.condition == Condition::kAnimate ? "animate subject" : "";
      out += Str("| ", SymName(r.lhs), " | ", r.name, " | ", Join(items, " "), " | ", FormatProb(r.weight / total),
                 " | ", r.recursive ? "yes" : "", " | ", cond, " |\n");
    }
  }
  out += Str("\nRecursive rules: weight x ", kGrammar.decay, "^level (level = recursive rules above), none at level >= ",
             kGrammar.max_level, ". Free animacy: animate with p = ", kGrammar.p_animate,
             ". Free number: 50/50. Sentences over ", kGrammar.max_words, " words are redrawn.\n\n");

  out += "| word class | entries | forms | examples |\n|---|---|---|---|\n";
  size_t forms_total = 0;
  for (size_t c = static_cast<size_t>(Sym::kDet); c < kSymCount; ++c) {
    const auto& ids = EntriesOf(static_cast<Sym>(c));
    std::vector<std::string> forms, examples;
    for (uint16_t e : ids) {
      const LexEntry& x = Lexicon()[e];
      for (const char* f : {x.sg, x.pl, x.before_vowel}) {
        if (f != nullptr && std::find(forms.begin(), forms.end(), f) == forms.end()) forms.push_back(f);
      }
      if (examples.size() < 4) {
        examples.push_back(x.sg != nullptr && x.pl != nullptr && std::string(x.sg) != x.pl
                               ? Str(x.sg, "/", x.pl)
                               : Str(x.sg != nullptr ? x.sg : x.pl));
      }
    }
    forms_total += forms.size();
    out += Str("| ", SymName(static_cast<Sym>(c)), " | ", ids.size(), " | ", forms.size(), " | ",
               Join(examples, ", "), " |\n");
  }
  out += Str("\nLexicon: ", Lexicon().size(), " entries, ", forms_total,
             " forms counted per class (a word in several classes, e.g. \"that\" or \"and\", counts in each).\n");
  return out;
}

std::string DescribeLexicon() {
  auto mask_name = [](uint8_t m) {
    return m == kMaskAnimate ? "animate" : m == kMaskInanimate ? "inanimate" : "any";
  };
  std::string out;
  for (size_t c = static_cast<size_t>(Sym::kDet); c < kSymCount; ++c) {
    const Sym cls = static_cast<Sym>(c);
    // One line per (subject or own class, object class) group, in table order of first appearance.
    std::vector<std::pair<std::string, std::vector<std::string>>> groups;
    for (uint16_t e : EntriesOf(cls)) {
      const LexEntry& x = Lexicon()[e];
      std::string key;
      if (cls == Sym::kNoun) key = mask_name(x.mask);
      if (cls == Sym::kAdj || cls == Sym::kRel) key = Str("with ", mask_name(x.mask), " nouns");
      if (IsVerbClass(cls)) key = Str(mask_name(x.mask), " subject");
      if (cls == Sym::kVerbTr) key += Str(", ", mask_name(x.obj_mask), " object");
      std::string word = x.sg != nullptr && x.pl != nullptr && std::string(x.sg) != x.pl
                             ? Str(x.sg, "/", x.pl)
                             : Str(x.sg != nullptr ? x.sg : x.pl, x.sg == nullptr ? " (pl)" : x.pl == nullptr ? " (sg)" : "");
      if (x.before_vowel != nullptr) word += Str(" (", x.before_vowel, " before a vowel)");
      if (x.weight != 1.0) word += Str(" x", x.weight);
      auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; });
      if (it == groups.end()) {
        groups.push_back({key, {}});
        it = groups.end() - 1;
      }
      it->second.push_back(word);
    }
    for (const auto& [key, words] : groups) {
      out += Str("- **", SymName(cls), "**", key.empty() ? "" : Str(" (", key, ")"), ": ", Join(words, ", "), "\n");
    }
  }
  return out;
}

}  // namespace pc::corpus
