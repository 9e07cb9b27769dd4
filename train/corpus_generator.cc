#include "train/corpus_generator.h"

#include <array>

#include "core/error.h"

namespace pc::corpus {

namespace {
constexpr size_t kMaxChoices = 128;  // rules of one symbol / entries of one word class

bool StartsWithVowel(const char* w) {
  switch (w[0]) {
    case 'a': case 'e': case 'i': case 'o': case 'u': return true;
    default: return false;
  }
}
}  // namespace

Generator::Generator(uint64_t stream_seed) : rng_(stream_seed) {}

void Generator::Next(Sentence* out) {
  for (;;) {
    out->Clear();
    Context root{DrawNumber(), DrawAnim(), 0, -1, false, true, 0};
    Expand(Sym::kS, root, -1, 1, out);
    if (static_cast<int>(out->words.size()) <= kGrammar.max_words) return;
    ++redrawn_;
  }
}

const Rule& Generator::ChooseRule(Sym lhs, const Context& ctx, uint8_t* id) {
  const auto& ids = RulesOf(lhs);
  const auto& rules = Rules();
  PC_ASSERT(!ids.empty() && ids.size() <= kMaxChoices, "no rules for ", SymName(lhs));
  std::array<double, kMaxChoices> w;
  double decay = 1;
  for (int l = 0; l < ctx.level; ++l) decay *= kGrammar.decay;
  for (size_t i = 0; i < ids.size(); ++i) {
    const Rule& r = rules[ids[i]];
    bool ok = (r.condition != Condition::kPlural || ctx.num == Number::kPl) &&
              (r.condition != Condition::kAnimate || ctx.anim == Anim::kAnimate) &&
              (!r.recursive || ctx.level < kGrammar.max_level);
    w[i] = ok ? r.weight * (r.recursive ? decay : 1.0) : 0.0;
  }
  size_t k = rng_.Categorical(w.data(), ids.size());
  PC_ASSERT(w[k] > 0, "no applicable rule for ", SymName(lhs));
  *id = ids[k];
  return rules[ids[k]];
}

uint16_t Generator::ChooseEntry(Sym cls, const Context& ctx) {
  const auto& ids = EntriesOf(cls);
  const auto& lex = Lexicon();
  PC_ASSERT(!ids.empty() && ids.size() <= kMaxChoices, "no words of class ", SymName(cls));
  const uint8_t anim = MaskOf(ctx.anim);
  std::array<double, kMaxChoices> w;
  for (size_t i = 0; i < ids.size(); ++i) {
    const LexEntry& e = lex[ids[i]];
    bool ok;
    switch (cls) {
      case Sym::kNoun: ok = e.mask == anim; break;
      case Sym::kDet: ok = (ctx.num == Number::kSg ? e.sg : e.pl) != nullptr; break;
      case Sym::kAdj: case Sym::kRel: ok = (e.mask & anim) != 0; break;
      case Sym::kVerbIntr: case Sym::kVerbTr: case Sym::kCopula: case Sym::kVerbSent:
        ok = (e.mask & anim) != 0 && (ctx.gap_mask == 0 || (e.obj_mask & ctx.gap_mask) != 0);
        break;
      default: ok = true;
    }
    w[i] = ok ? e.weight : 0.0;
  }
  size_t k = rng_.Categorical(w.data(), ids.size());
  PC_ASSERT(w[k] > 0, "no word of class ", SymName(cls), " fits the context");
  return ids[k];
}

Generator::Result Generator::Emit(const Item& item, const Context& ctx, int node, int depth, Sentence* s) {
  const uint16_t e = ChooseEntry(item.sym, ctx);
  const int index = static_cast<int>(s->words.size());
  s->words.push_back({e, ctx.num, static_cast<uint8_t>(depth), static_cast<int16_t>(node)});
  if (item.flags & kAgrees) {
    PC_ASSERT(ctx.controller >= 0, "agreeing verb without a subject");
    s->agreements.push_back({static_cast<int16_t>(ctx.controller), static_cast<int16_t>(index), ctx.num,
                             ctx.coordinated, ctx.main});
  }
  Result r;
  r.head = index;
  r.obj_mask = Lexicon()[e].obj_mask;
  return r;
}

Generator::Result Generator::Expand(Sym sym, const Context& ctx, int parent, int depth, Sentence* s) {
  const int node = static_cast<int>(s->nodes.size());
  uint8_t rule_id = 0;
  const Rule& rule = ChooseRule(sym, ctx, &rule_id);
  const int16_t first = static_cast<int16_t>(s->words.size());
  s->nodes.push_back({sym, rule_id, static_cast<int16_t>(parent), static_cast<uint8_t>(depth), first, first});

  Result result;
  int controller = ctx.controller;
  bool coordinated = ctx.coordinated;
  uint8_t obj_mask = kMaskAny;
  const int level = ctx.level + (rule.recursive ? 1 : 0);
  for (const Item& item : rule.rhs) {
    Context c;
    c.num = item.num == NumSpec::kSame ? ctx.num : DrawNumber();
    switch (item.anim) {
      case AnimSpec::kSame: c.anim = ctx.anim; break;
      case AnimSpec::kFree: c.anim = DrawAnim(); break;
      case AnimSpec::kVerbObject:
        c.anim = obj_mask == kMaskAny ? DrawAnim() : obj_mask == kMaskAnimate ? Anim::kAnimate : Anim::kInanimate;
        break;
    }
    c.gap_mask = (item.flags & kSetsGap) ? MaskOf(ctx.anim) : (item.flags & kKeepsGap) ? ctx.gap_mask : 0;
    c.controller = controller;
    c.coordinated = coordinated;
    c.main = ctx.main && (item.flags & kMain) != 0;
    c.level = level;
    Result child = IsPhrase(item.sym) ? Expand(item.sym, c, node, depth + 1, s) : Emit(item, c, node, depth, s);
    if (item.flags & kControls) {
      controller = child.head;
      coordinated = child.coordinated;
    }
    if (item.flags & kHead) {
      result.head = child.head;
      result.coordinated = child.coordinated;
    }
    if (IsVerbClass(item.sym)) obj_mask = child.obj_mask;
  }
  if (rule.coordination) result.coordinated = true;
  s->nodes[node].end = static_cast<int16_t>(s->words.size());
  return result;
}

std::vector<std::string> RenderWords(const Sentence& s) {
  std::vector<std::string> out;
  out.reserve(s.words.size());
  for (size_t i = 0; i < s.words.size(); ++i) {
    const Word& w = s.words[i];
    const LexEntry& e = Lexicon()[w.entry];
    const char* form = Form(w.entry, w.num);
    if (e.before_vowel != nullptr && i + 1 < s.words.size() &&
        StartsWithVowel(Form(s.words[i + 1].entry, s.words[i + 1].num))) {
      form = e.before_vowel;
    }
    out.emplace_back(form);
  }
  if (!out.empty() && out[0][0] >= 'a' && out[0][0] <= 'z') out[0][0] = static_cast<char>(out[0][0] - 'a' + 'A');
  return out;
}

std::string Render(const Sentence& s) {
  std::string text;
  text.reserve(s.words.size() * 7);
  for (const std::string& w : RenderWords(s)) {
    if (!text.empty()) text += ' ';
    text += w;
  }
  text += '.';
  return text;
}

std::string RenderTree(const Sentence& s) {
  const std::vector<std::string> words = RenderWords(s);
  std::string out;
  // Walk nodes in preorder; close nodes whose span ended before the next item.
  std::vector<int> open;
  size_t next_node = 0;
  for (size_t i = 0; i <= words.size(); ++i) {
    while (!open.empty() && s.nodes[open.back()].end <= static_cast<int>(i)) {
      out += ')';
      open.pop_back();
    }
    if (i == words.size()) break;
    while (next_node < s.nodes.size() && s.nodes[next_node].first == static_cast<int>(i) &&
           s.nodes[next_node].end > static_cast<int>(i)) {
      if (!out.empty()) out += ' ';
      out += '(';
      out += SymName(s.nodes[next_node].sym);
      open.push_back(static_cast<int>(next_node));
      ++next_node;
    }
    out += Str(" (", SymName(Lexicon()[s.words[i].entry].cls), " ", words[i], ")");
  }
  return out;
}

}  // namespace pc::corpus
