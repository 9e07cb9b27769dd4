#include "core/error.h"

#include <cstdio>
#include <cstdlib>

namespace pc::detail {

void ThrowError(const std::string& message) { throw Error(message); }

void ThrowOutputError(const std::string& message) { throw OutputError(message); }

void AssertFail(const char* cond, const char* file, int line, const std::string& message) {
  std::fprintf(stderr, "perpcomp: internal error (a bug, please report): %s:%d: assertion '%s' failed %s\n", file,
               line, cond, message.c_str());
  std::abort();
}

}  // namespace pc::detail
