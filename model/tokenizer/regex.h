// model/tokenizer/regex.h — the patterns of tokenizer.json (PCRE2, UTF-8 + Unicode properties).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pc::tok {

// [start, end) byte offsets of one match.
using Span = std::pair<size_t, size_t>;

// A compiled regular expression (PCRE2 with UTF and UCP: \s, \w, \d and \p{..} are Unicode-aware).
// Thread-safe after construction. Input must be valid UTF-8 (not re-checked, for speed).
class Regex {
 public:
  // Throws pc::Error naming `where`, the pattern and the offset of the error.
  Regex(const std::string& pattern, const std::string& where);
  // Non-overlapping matches, left to right. After an empty match the search retries at the same place
  // for a non-empty one, else moves one character on (Perl semantics; tokenizer patterns never match
  // the empty string, where Oniguruma's handling could differ).
  std::vector<Span> FindAll(std::string_view text) const;
  const std::string& pattern() const { return pattern_; }

 private:
  struct Code;
  std::string pattern_;
  std::shared_ptr<Code> code_;
};

// A tokenizer.json pattern: {"String": "..."} (literal) or {"Regex": "..."}.
class Pattern {
 public:
  static Pattern Literal(std::string text);
  static Pattern FromRegex(const std::string& regex, const std::string& where);
  std::vector<Span> FindAll(std::string_view text) const;
  bool is_literal() const { return regex_ == nullptr; }
  const std::string& text() const { return text_; }  // the literal or the regex source

 private:
  std::string text_;
  std::shared_ptr<Regex> regex_;
};

}  // namespace pc::tok
