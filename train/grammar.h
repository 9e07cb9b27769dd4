// train/grammar.h — the synthetic agreement grammar as data: word classes, the lexicon and the
// rules with their probabilities (docs/CORPUS.md). No LibTorch.
//
// A feature-annotated probabilistic grammar: every symbol is expanded in a context that carries a
// number (sg/pl) and an animacy (animate/inanimate). Rules say, per child, whether it inherits the
// parent's features or draws fresh ones; words are drawn from the lexicon entries of their class
// that fit the context. Subject–verb agreement arises because a clause passes its number to both
// its subject NP and its VP; attractors arise because modifiers (PP, relative clauses) inside the
// subject draw their own, independent number. corpus_generator.cc interprets these tables.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pc::corpus {

enum class Number : uint8_t { kSg = 0, kPl = 1 };
enum class Anim : uint8_t { kAnimate = 0, kInanimate = 1 };

// Which animacy classes a word accepts: as its subject (verbs), its object (transitive verbs), the
// noun it modifies (adjectives, relative pronouns), or its own class (nouns).
enum AnimMask : uint8_t { kMaskAnimate = 1, kMaskInanimate = 2, kMaskAny = 3 };
inline uint8_t MaskOf(Anim a) { return a == Anim::kAnimate ? kMaskAnimate : kMaskInanimate; }

enum class Sym : uint8_t {
  // Phrase symbols: every expansion is one node of the parse tree (and adds 1 to the depth below it).
  kS,       // clause
  kNP,      // noun phrase
  kVP,      // verb phrase
  kPP,      // prepositional phrase
  kRC,      // relative clause ("that chases the cats", "that the cats chase")
  kCP,      // complement clause ("that the dogs run")
  kSGap,    // clause with an object gap, inside an object relative ("the cats chase _")
  kVPGap,   // verb phrase with an object gap
  // Word classes (preterminals): every expansion is one word.
  kDet, kNoun, kAdj, kDeg, kAdv, kVerbIntr, kVerbTr, kCopula, kVerbSent, kPrep, kRel, kComp, kConjNP, kConjVP, kConjS,
  kCount
};
inline bool IsPhrase(Sym s) { return s < Sym::kDet; }
inline bool IsVerbClass(Sym s) {
  return s == Sym::kVerbIntr || s == Sym::kVerbTr || s == Sym::kCopula || s == Sym::kVerbSent;
}
// Tree label ("S", "NP", "S_gap", ...) or word-class name ("Det", "N", "V_intr", ...).
const char* SymName(Sym s);

// One word of the lexicon. Number-invariant words (prepositions, conjunctions, adverbs, "the")
// have sg == pl; plural-only determiners have sg == nullptr, singular-only ones pl == nullptr.
struct LexEntry {
  Sym cls;
  const char* sg;          // singular noun / 3rd-person singular verb form
  const char* pl;          // plural form
  uint8_t mask;            // nouns: own class; verbs: subject classes; adjectives, "who": classes of their noun
  uint8_t obj_mask;        // transitive verbs: object classes (kMaskAny otherwise)
  double weight;           // relative probability among the eligible entries of its class
  const char* before_vowel = nullptr;  // form before a vowel-initial word ("a" -> "an")
};
const std::vector<LexEntry>& Lexicon();
// Indices into Lexicon() of the entries of one word class, in table order.
const std::vector<uint16_t>& EntriesOf(Sym cls);
// The surface form of entry `e` for number `num` (PC_ASSERTs that it exists).
const char* Form(uint16_t e, Number num);

// ---- rules ----------------------------------------------------------------------------------
enum class NumSpec : uint8_t { kSame, kFree };                // inherit the parent's number, or draw 50/50
enum class AnimSpec : uint8_t { kSame, kFree, kVerbObject };  // inherit, draw, or fit the preceding verb's object
enum ItemFlag : uint8_t {
  kHead = 1,       // this child's head word is the phrase's head
  kControls = 2,   // this child's head controls agreement of the following siblings (a subject)
  kAgrees = 4,     // a verb that agrees with the controlling noun (records a subject–verb dependency)
  kMain = 8,       // on the main path: the root clause's verb is reached through kMain items only
  kSetsGap = 16,   // opens an object gap filled by the parent's noun (object relatives)
  kKeepsGap = 32,  // passes an open gap down
};
struct Item {
  Sym sym;
  NumSpec num = NumSpec::kSame;
  AnimSpec anim = AnimSpec::kSame;
  uint8_t flags = 0;
};
enum class Condition : uint8_t { kNone, kPlural, kAnimate };  // when a rule may be chosen
struct Rule {
  const char* name;
  Sym lhs;
  double weight;       // relative to the other rules of `lhs` (at recursion level 0)
  bool recursive;      // weight x kGrammar.decay^level; never chosen at level >= kGrammar.max_level
  Condition condition;
  bool coordination;   // a coordinated NP (always plural)
  std::vector<Item> rhs;
};
const std::vector<Rule>& Rules();
// Indices into Rules() of the rules of one phrase symbol.
const std::vector<uint8_t>& RulesOf(Sym lhs);

struct GrammarParams {
  double decay = 0.5;      // weight factor of a recursive rule per enclosing recursive rule
  int max_level = 4;       // recursive rules on one path from the root, at most
  double p_animate = 0.6;  // probability of an animate noun where animacy is drawn freely
  int max_words = 30;      // longer sentences are redrawn
};
inline constexpr GrammarParams kGrammar{};

// The rules (probabilities normalised per symbol at level 0) and the word classes (sizes,
// examples), as Markdown tables; docs/CORPUS.md includes this text verbatim (a test checks it).
std::string DescribeGrammar();
// Every lexicon entry, one Markdown list item per class and animacy group ("xW": weight W != 1);
// also included verbatim in docs/CORPUS.md.
std::string DescribeLexicon();

}  // namespace pc::corpus
