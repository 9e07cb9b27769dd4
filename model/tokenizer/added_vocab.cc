#include "model/tokenizer/added_vocab.h"

#include <algorithm>

#include "model/tokenizer/utf8.h"

namespace pc::tok {

void AddedVocabulary::Matcher::Add(std::string pattern, int token_index) {
  if (!pattern.empty()) patterns_.emplace_back(std::move(pattern), token_index);
}

void AddedVocabulary::Matcher::Finish() {
  for (auto& bucket : by_first_byte_) bucket.clear();
  for (size_t i = 0; i < patterns_.size(); ++i) {
    by_first_byte_[static_cast<unsigned char>(patterns_[i].first[0])].push_back(static_cast<int>(i));
  }
  for (auto& bucket : by_first_byte_) {
    std::stable_sort(bucket.begin(), bucket.end(),
                     [&](int a, int b) { return patterns_[a].first.size() > patterns_[b].first.size(); });
  }
}

AddedVocabulary::Matcher::Match AddedVocabulary::Matcher::Find(const std::string& text, size_t from) const {
  for (size_t pos = from; pos < text.size(); ++pos) {
    const auto& bucket = by_first_byte_[static_cast<unsigned char>(text[pos])];
    for (int i : bucket) {
      const std::string& p = patterns_[i].first;
      if (text.compare(pos, p.size(), p) == 0) return Match{pos, p.size(), patterns_[i].second};
    }
  }
  return Match{};
}

AddedVocabulary::AddedVocabulary(std::vector<AddedToken> tokens, const Normalizer* normalizer)
    : tokens_(std::move(tokens)) {
  for (size_t i = 0; i < tokens_.size(); ++i) {
    const AddedToken& t = tokens_[i];
    if (!t.normalized) {
      raw_.Add(t.content, static_cast<int>(i));
    } else {
      std::string pattern = t.content;
      if (normalizer != nullptr) normalizer->Normalize(&pattern);
      normalized_.Add(pattern, static_cast<int>(i));
    }
  }
  raw_.Finish();
  normalized_.Finish();
}

namespace {
// Start of the run of whitespace that ends `s` (s.size() when none).
size_t WhitespaceRunAtEnd(std::string_view s) {
  size_t start = s.size();
  while (start > 0) {
    int len = 0;
    if (!IsWhitespace(LastCodePoint(s.substr(0, start), &len))) break;
    start -= len;
  }
  return start;
}
// Length of the run of whitespace that starts `s`.
size_t WhitespaceRunAtStart(std::string_view s) {
  size_t pos = 0;
  while (pos < s.size()) {
    size_t next = pos;
    if (!IsWhitespace(NextCodePoint(s, &next))) break;
    pos = next;
  }
  return pos;
}
}  // namespace

void AddedVocabulary::SplitOn(const Matcher& matcher, Piece piece, Pieces* out) const {
  const std::string& text = piece.text;
  size_t emitted = 0;  // end of what is already in `out`
  auto emit_text = [&](size_t start, size_t end) {
    if (end > start) out->push_back(Piece{text.substr(start, end - start), -1, piece.at_start && start == 0});
  };
  for (size_t from = 0; from < text.size();) {
    Matcher::Match m = matcher.Find(text, from);
    if (m.length == 0) break;
    const AddedToken& token = tokens_[m.token];
    size_t start = m.start, stop = m.start + m.length;
    from = stop;
    if (token.single_word) {
      int len = 0;
      bool word_before = start > 0 && IsWordChar(LastCodePoint(std::string_view(text).substr(0, start), &len));
      size_t after = stop;
      bool word_after = stop < text.size() && IsWordChar(NextCodePoint(text, &after));
      if (word_before || word_after) continue;
    }
    if (token.lstrip) start = std::max(WhitespaceRunAtEnd(std::string_view(text).substr(0, start)), emitted);
    if (token.rstrip) stop += WhitespaceRunAtStart(std::string_view(text).substr(stop));
    emit_text(emitted, start);
    out->push_back(Piece{token.content, token.id, piece.at_start && start == 0});
    emitted = stop;
    from = stop;
  }
  emit_text(emitted, text.size());
}

Pieces AddedVocabulary::SplitAndNormalize(const std::string& text, const Normalizer* normalizer) const {
  Pieces raw;
  if (text.empty()) return raw;
  if (raw_.empty()) {
    raw.push_back(Piece{text, -1, true});
  } else {
    SplitOn(raw_, Piece{text, -1, true}, &raw);
  }
  Pieces out;
  out.reserve(raw.size());
  for (Piece& p : raw) {
    if (p.id >= 0) {
      out.push_back(std::move(p));
      continue;
    }
    if (normalizer != nullptr) normalizer->Normalize(&p.text);
    if (p.text.empty()) continue;
    if (normalized_.empty()) {
      out.push_back(std::move(p));
    } else {
      SplitOn(normalized_, std::move(p), &out);
    }
  }
  return out;
}

}  // namespace pc::tok
