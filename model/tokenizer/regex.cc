#define PCRE2_CODE_UNIT_WIDTH 8
#include "model/tokenizer/regex.h"

#include <pcre2.h>

#include "core/error.h"
#include "model/tokenizer/utf8.h"

namespace pc::tok {

struct Regex::Code {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Code() { pcre2_code_free(code); }
};

namespace {
std::string Pcre2Message(int code) {
  PCRE2_UCHAR buffer[256];
  int n = pcre2_get_error_message(code, buffer, sizeof(buffer));
  return n < 0 ? Str("PCRE2 error ", code) : std::string(reinterpret_cast<const char*>(buffer));
}

struct MatchData {
  explicit MatchData(const pcre2_code* code) : data(pcre2_match_data_create_from_pattern(code, nullptr)) {
    PC_ASSERT(data != nullptr, "out of memory");
  }
  ~MatchData() { pcre2_match_data_free(data); }
  pcre2_match_data* data;
};
}  // namespace

Regex::Regex(const std::string& pattern, const std::string& where) : pattern_(pattern), code_(std::make_shared<Code>()) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  code_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                              PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
  PC_CHECK(code_->code != nullptr, where, ": invalid regular expression '", pattern, "' at offset ", offset, ": ",
           Pcre2Message(error));
  code_->jit = pcre2_jit_compile(code_->code, PCRE2_JIT_COMPLETE) == 0;
}

std::vector<Span> Regex::FindAll(std::string_view text) const {
  std::vector<Span> spans;
  MatchData md(code_->code);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;
  uint32_t extra = 0;  // PCRE2_NOTEMPTY_ATSTART | PCRE2_ANCHORED after an empty match
  while (pos <= text.size()) {
    uint32_t options = PCRE2_NO_UTF_CHECK | extra;
    int rc = pcre2_match(code_->code, subject, text.size(), pos, options, md.data, nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {  // deep backtracking: the interpreter has a larger budget
      rc = pcre2_match(code_->code, subject, text.size(), pos, options | PCRE2_NO_JIT, md.data, nullptr);
    }
    if (rc == PCRE2_ERROR_NOMATCH) {
      if (extra == 0) break;
      extra = 0;  // no non-empty match here: move one character on
      if (pos >= text.size()) break;
      pos += Utf8Len(static_cast<unsigned char>(text[pos]));
      continue;
    }
    PC_CHECK(rc >= 0, "regular expression '", pattern_, "' failed on a text of ", text.size(), " bytes at byte ",
             pos, ": ", Pcre2Message(rc));
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(md.data);
    size_t start = ovector[0], end = ovector[1];
    spans.emplace_back(start, end);
    pos = end;
    extra = start == end ? (PCRE2_NOTEMPTY_ATSTART | PCRE2_ANCHORED) : 0;
  }
  return spans;
}

Pattern Pattern::Literal(std::string text) {
  Pattern p;
  p.text_ = std::move(text);
  return p;
}

Pattern Pattern::FromRegex(const std::string& regex, const std::string& where) {
  Pattern p;
  p.text_ = regex;
  p.regex_ = std::make_shared<Regex>(regex, where);
  return p;
}

std::vector<Span> Pattern::FindAll(std::string_view text) const {
  if (regex_ != nullptr) return regex_->FindAll(text);
  std::vector<Span> spans;
  if (text_.empty()) return spans;
  for (size_t pos = text.find(text_); pos != std::string_view::npos; pos = text.find(text_, pos + text_.size())) {
    spans.emplace_back(pos, pos + text_.size());
  }
  return spans;
}

}  // namespace pc::tok
