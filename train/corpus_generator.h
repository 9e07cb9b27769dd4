// train/corpus_generator.h — draws sentences with their parses from the grammar tables
// (train/grammar.h), deterministically for a stream seed. No LibTorch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "train/corpus_rng.h"
#include "train/grammar.h"

namespace pc::corpus {

// One word of a generated sentence.
struct Word {
  uint16_t entry;  // index into Lexicon()
  Number num;      // the number it was drawn with (meaningful for Det, N and verbs)
  uint8_t depth;   // phrase nodes above the word (the root clause is 1): its depth in the tree
  int16_t node;    // index of its parent phrase node in Sentence::nodes
};

// One phrase node of the parse tree; nodes are stored in preorder.
struct Node {
  Sym sym;
  uint8_t rule;   // index into Rules()
  int16_t parent; // -1 for the root
  uint8_t depth;  // 1 for the root
  int16_t first;  // words [first, end) are below this node
  int16_t end;
};

// A subject–verb dependency: `verb` agrees in number with the subject whose head is `subject`.
// For a coordinated subject ("the dog and the cats") `subject` is the last conjunct's head and
// `num` is plural. Object gaps do not agree; each agreeing verb has exactly one dependency.
struct Agreement {
  int16_t subject;
  int16_t verb;
  Number num;
  bool coordinated;  // the subject is a coordinated NP
  bool main;         // the verb of the root clause (its first verb when VPs or clauses are coordinated)
};

struct Sentence {
  std::vector<Word> words;
  std::vector<Node> nodes;
  std::vector<Agreement> agreements;
  void Clear() {
    words.clear();
    nodes.clear();
    agreements.clear();
  }
};

class Generator {
 public:
  explicit Generator(uint64_t stream_seed);
  // Draws the next sentence of the stream into `out` (redrawing any over kGrammar.max_words).
  void Next(Sentence* out);
  int64_t redrawn() const { return redrawn_; }

 private:
  struct Context {
    Number num;
    Anim anim;
    uint8_t gap_mask;   // object class of an open object gap (0: none)
    int controller;     // word index of the noun that verbs here agree with (-1: none)
    bool coordinated;   // the controller heads a coordinated NP
    bool main;          // on the main path
    int level;          // recursive rules above
  };
  struct Result {
    int head = -1;
    bool coordinated = false;
    uint8_t obj_mask = kMaskAny;  // of a chosen verb, for a following object NP
  };
  Result Expand(Sym sym, const Context& ctx, int parent, int depth, Sentence* s);
  Result Emit(const Item& item, const Context& ctx, int node, int depth, Sentence* s);
  const Rule& ChooseRule(Sym lhs, const Context& ctx, uint8_t* id);
  uint16_t ChooseEntry(Sym cls, const Context& ctx);
  Number DrawNumber() { return rng_.Bernoulli(0.5) ? Number::kPl : Number::kSg; }
  Anim DrawAnim() { return rng_.Bernoulli(kGrammar.p_animate) ? Anim::kAnimate : Anim::kInanimate; }

  Rng rng_;
  int64_t redrawn_ = 0;
};

// The sentence as text: words separated by single spaces, the first letter capitalised, a final
// period; "a" becomes "an" before a vowel-initial word.
std::string Render(const Sentence& s);
// The words as they appear in Render() (capitalised first word, "an"), without the period.
std::vector<std::string> RenderWords(const Sentence& s);
// A bracketed tree: "(S (NP (Det The) (N dog)) (VP (V_intr runs)))".
std::string RenderTree(const Sentence& s);

}  // namespace pc::corpus
