#include "model/tokenizer/pre_tokenizer.h"

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "model/tokenizer/spec_util.h"
#include "model/tokenizer/utf8.h"

namespace pc::tok {

const char* const kGpt2Regex = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

std::vector<Span> Gpt2Split(std::string_view text) {
  static const Regex regex(kGpt2Regex, "the GPT-2 pre-tokenization regex");
  return regex.FindAll(text);  // the regex matches every character, so there are no gaps
}

void PreTokenizer::Apply(Pieces* pieces) const {
  Pieces out;
  out.reserve(pieces->size());
  for (Piece& p : *pieces) {
    if (p.id >= 0) {
      out.push_back(std::move(p));
    } else if (!p.text.empty()) {
      SplitPiece(std::move(p), &out);
    }
  }
  pieces->swap(out);
}

namespace {

enum class Behavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

Behavior ParseBehavior(const std::string& name, const std::string& where) {
  if (name == "Removed") return Behavior::kRemoved;
  if (name == "Isolated") return Behavior::kIsolated;
  if (name == "MergedWithPrevious") return Behavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return Behavior::kMergedWithNext;
  if (name == "Contiguous") return Behavior::kContiguous;
  ThrowUnsupported("split behavior", name, where,
                   {"Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"});
}

// The parts of a text of `len` bytes with `matches`, as Hugging Face's NormalizedString::split.
std::vector<Span> SplitSpans(size_t len, const std::vector<Span>& matches, Behavior behavior, bool invert) {
  std::vector<std::pair<Span, bool>> segments;  // (span, is_match), covering the text
  size_t prev = 0;
  for (const Span& m : matches) {
    if (m.first != prev) segments.push_back({{prev, m.first}, invert});
    segments.push_back({m, !invert});
    prev = m.second;
  }
  if (prev != len || len == 0) segments.push_back({{prev, len}, invert});

  std::vector<Span> parts;
  bool previous_match = false;
  switch (behavior) {
    case Behavior::kRemoved:
      for (const auto& [span, is_match] : segments) {
        if (!is_match) parts.push_back(span);
      }
      break;
    case Behavior::kIsolated:
      for (const auto& s : segments) parts.push_back(s.first);
      break;
    case Behavior::kMergedWithPrevious:
      for (const auto& [span, is_match] : segments) {
        if (is_match && !previous_match && !parts.empty()) {
          parts.back().second = span.second;
        } else {
          parts.push_back(span);
        }
        previous_match = is_match;
      }
      break;
    case Behavior::kMergedWithNext:
      for (auto it = segments.rbegin(); it != segments.rend(); ++it) {
        if (it->second && !previous_match && !parts.empty()) {
          parts.back().first = it->first.first;
        } else {
          parts.push_back(it->first);
        }
        previous_match = it->second;
      }
      std::reverse(parts.begin(), parts.end());
      break;
    case Behavior::kContiguous:
      for (size_t i = 0; i < segments.size(); ++i) {
        const auto& [span, is_match] = segments[i];
        if (i > 0 && is_match == previous_match) {
          parts.back().second = span.second;
        } else {
          parts.push_back(span);
        }
        previous_match = is_match;
      }
      break;
  }
  return parts;
}

void EmitParts(const Piece& piece, const std::vector<Span>& parts, Pieces* out) {
  for (const auto& [start, end] : parts) {
    if (end > start) out->push_back(Piece{piece.text.substr(start, end - start), -1, piece.at_start && start == 0});
  }
}

class SplitPreTokenizer : public PreTokenizer {
 public:
  SplitPreTokenizer(Pattern pattern, Behavior behavior, bool invert)
      : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}

 protected:
  void SplitPiece(Piece piece, Pieces* out) const override {
    EmitParts(piece, SplitSpans(piece.text.size(), pattern_.FindAll(piece.text), behavior_, invert_), out);
  }

 private:
  Pattern pattern_;
  Behavior behavior_;
  bool invert_;
};

class ByteLevel : public PreTokenizer {
 public:
  ByteLevel(bool add_prefix_space, bool use_regex) : add_prefix_space_(add_prefix_space), use_regex_(use_regex) {}
  bool IsByteLevel() const override { return true; }

 protected:
  void SplitPiece(Piece piece, Pieces* out) const override {
    if (add_prefix_space_ && piece.text[0] != ' ') piece.text.insert(0, " ");
    const ByteLevelAlphabet& alphabet = ByteLevelAlphabet::Get();
    if (!use_regex_) {
      out->push_back(Piece{alphabet.EncodeBytes(piece.text), -1, piece.at_start});
      return;
    }
    std::string_view text(piece.text);
    size_t prev = 0;
    auto emit = [&](size_t start, size_t end) {
      if (end > start) {
        out->push_back(Piece{alphabet.EncodeBytes(text.substr(start, end - start)), -1, piece.at_start && start == 0});
      }
    };
    for (const auto& [start, end] : Gpt2Split(text)) {
      emit(prev, start);  // (never happens: the regex covers every character)
      emit(start, end);
      prev = end;
    }
    emit(prev, text.size());
  }

 private:
  bool add_prefix_space_, use_regex_;
};

class Metaspace : public PreTokenizer {
 public:
  enum class Prepend { kAlways, kFirst, kNever };
  Metaspace(std::string replacement, Prepend prepend, bool split)
      : replacement_(std::move(replacement)), prepend_(prepend), split_(split) {}
  bool IsMetaspace() const override { return true; }

 protected:
  void SplitPiece(Piece piece, Pieces* out) const override {
    std::string text;
    text.reserve(piece.text.size() + 8);
    for (char c : piece.text) {
      if (c == ' ') {
        text += replacement_;
      } else {
        text += c;
      }
    }
    bool starts = text.compare(0, replacement_.size(), replacement_) == 0;
    if (!starts && (prepend_ == Prepend::kAlways || (prepend_ == Prepend::kFirst && piece.at_start))) {
      text.insert(0, replacement_);
    }
    piece.text = std::move(text);
    if (!split_) {
      out->push_back(std::move(piece));
      return;
    }
    std::vector<Span> matches;
    for (size_t pos = piece.text.find(replacement_); pos != std::string::npos;
         pos = piece.text.find(replacement_, pos + replacement_.size())) {
      matches.emplace_back(pos, pos + replacement_.size());
    }
    EmitParts(piece, SplitSpans(piece.text.size(), matches, Behavior::kMergedWithNext, false), out);
  }

 private:
  std::string replacement_;
  Prepend prepend_;
  bool split_;
};

}  // namespace

class SequencePreTokenizer : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> parts) : parts_(std::move(parts)) {}
  bool IsByteLevel() const override {
    for (const auto& p : parts_) {
      if (p->IsByteLevel()) return true;
    }
    return false;
  }
  bool IsMetaspace() const override {
    for (const auto& p : parts_) {
      if (p->IsMetaspace()) return true;
    }
    return false;
  }

 protected:
  void SplitPiece(Piece piece, Pieces* out) const override {
    Pieces pieces;
    pieces.push_back(std::move(piece));
    for (const auto& p : parts_) p->Apply(&pieces);
    for (Piece& p : pieces) out->push_back(std::move(p));
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

std::unique_ptr<PreTokenizer> MakePreTokenizer(const nlohmann::json& spec, const std::string& where) {
  if (spec.is_null()) return nullptr;
  std::string type = SpecType(spec, where);
  if (type == "ByteLevel") {
    return std::make_unique<ByteLevel>(SpecBool(spec, "add_prefix_space", true, where),
                                       SpecBool(spec, "use_regex", true, where));
  }
  if (type == "Metaspace") {
    std::string replacement = SpecString(spec, "replacement", "\xE2\x96\x81", where);
    PC_CHECK(!replacement.empty(), where, ": \"replacement\" is empty");
    bool add_prefix_space = SpecBool(spec, "add_prefix_space", true, where);
    std::string scheme = SpecString(spec, "prepend_scheme", add_prefix_space ? "always" : "never", where);
    Metaspace::Prepend prepend = scheme == "always" ? Metaspace::Prepend::kAlways
                                 : scheme == "first" ? Metaspace::Prepend::kFirst
                                 : scheme == "never" ? Metaspace::Prepend::kNever
                                                     : (ThrowUnsupported("prepend_scheme", scheme, where,
                                                                         {"always", "first", "never"}),
                                                        Metaspace::Prepend::kNever);
    return std::make_unique<Metaspace>(replacement, prepend, SpecBool(spec, "split", true, where));
  }
  if (type == "Split") {
    return std::make_unique<SplitPreTokenizer>(SpecPattern(spec, "pattern", where),
                                               ParseBehavior(SpecString(spec, "behavior", "Isolated", where), where),
                                               SpecBool(spec, "invert", false, where));
  }
  if (type == "Whitespace") {  // \w+|[^\w\s]+, keeping the matches
    return std::make_unique<SplitPreTokenizer>(Pattern::FromRegex(R"(\w+|[^\w\s]+)", where), Behavior::kRemoved, true);
  }
  if (type == "WhitespaceSplit") {
    return std::make_unique<SplitPreTokenizer>(Pattern::FromRegex(R"(\s+)", where), Behavior::kRemoved, false);
  }
  if (type == "Digits") {
    bool individual = SpecBool(spec, "individual_digits", false, where);
    return std::make_unique<SplitPreTokenizer>(Pattern::FromRegex(R"(\p{N})", where),
                                               individual ? Behavior::kIsolated : Behavior::kContiguous, false);
  }
  if (type == "Punctuation") {
    return std::make_unique<SplitPreTokenizer>(Pattern::FromRegex(R"([\p{P}\x21-\x2F\x3A-\x40\x5B-\x60\x7B-\x7E])", where),
                                               ParseBehavior(SpecString(spec, "behavior", "Isolated", where), where),
                                               false);
  }
  if (type == "Sequence") {
    const auto& list = SpecArray(spec, "pretokenizers", where);
    std::vector<std::unique_ptr<PreTokenizer>> parts;
    for (size_t i = 0; i < list.size(); ++i) {
      auto part = MakePreTokenizer(list[i], Str(where, ".pretokenizers[", i, "]"));
      if (part != nullptr) parts.push_back(std::move(part));
    }
    return std::make_unique<SequencePreTokenizer>(std::move(parts));
  }
  ThrowUnsupported("pre_tokenizer", type, where,
                   {"ByteLevel", "Metaspace", "Split", "Sequence", "Whitespace", "WhitespaceSplit", "Digits",
                    "Punctuation"});
}

}  // namespace pc::tok
