#include "recipes/pattern.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "core/error.h"

namespace pc::recipes {

namespace {
constexpr size_t kMaxPatternLength = 4096;
constexpr uint32_t kMatchLimit = 1000000;  // backtracking steps; module names are < 200 bytes
constexpr uint32_t kDepthLimit = 10000;
constexpr uint32_t kHeapLimitKiB = 16 * 1024;

std::string Pcre2Message(int code) {
  PCRE2_UCHAR buf[256];
  int n = pcre2_get_error_message(code, buf, sizeof buf);
  return n < 0 ? "unknown PCRE2 error" : std::string(reinterpret_cast<const char*>(buf), static_cast<size_t>(n));
}
}  // namespace

// The compiled pattern and the match limits; read-only after construction, so one Code may
// serve several threads (each match gets its own match data).
struct Pattern::Code {
  pcre2_code* code = nullptr;
  pcre2_match_context* match_context = nullptr;
  ~Code() {
    pcre2_match_context_free(match_context);
    pcre2_code_free(code);
  }
};

Pattern Pattern::Compile(const std::string& pattern, const yaml::SourceLoc& loc, const std::string& what) {
  PC_CHECK(!pattern.empty(), loc.Str(), ": empty regex in ", what, " (it would match every module)");
  PC_CHECK(pattern.size() <= kMaxPatternLength, loc.Str(), ": regex in ", what, " is ", pattern.size(),
           " bytes long, more than ", kMaxPatternLength);
  auto code = std::make_shared<Code>();
  pcre2_compile_context* cc = pcre2_compile_context_create(nullptr);
  PC_CHECK(cc != nullptr, "out of memory compiling a regex");
  pcre2_set_max_pattern_length(cc, kMaxPatternLength);
  int error = 0;
  PCRE2_SIZE offset = 0;
  code->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), 0, &error, &offset, cc);
  pcre2_compile_context_free(cc);
  PC_CHECK(code->code != nullptr, loc.Str(), ": invalid regex '", pattern, "' in ", what, ": ", Pcre2Message(error),
           " at offset ", offset);
  code->match_context = pcre2_match_context_create(nullptr);
  PC_CHECK(code->match_context != nullptr, "out of memory compiling a regex");
  pcre2_set_match_limit(code->match_context, kMatchLimit);
  pcre2_set_depth_limit(code->match_context, kDepthLimit);
  pcre2_set_heap_limit(code->match_context, kHeapLimitKiB);
  Pattern p;
  p.code_ = std::move(code);
  p.pattern_ = pattern;
  p.loc_ = loc;
  return p;
}

bool Pattern::Matches(const std::string& module_name) const {
  PC_ASSERT(code_ != nullptr, "Matches on an empty Pattern");
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(code_->code, nullptr);
  PC_CHECK(md != nullptr, "out of memory matching a regex");
  int rc = pcre2_match(code_->code, reinterpret_cast<PCRE2_SPTR>(module_name.data()), module_name.size(), 0, 0, md,
                       code_->match_context);
  pcre2_match_data_free(md);
  if (rc >= 0) return true;
  PC_CHECK(rc == PCRE2_ERROR_NOMATCH, loc_.Str(), ": regex '", pattern_, "' failed on '", module_name,
           "': ", Pcre2Message(rc), " (simplify the pattern)");
  return false;
}

}  // namespace pc::recipes
