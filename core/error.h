// core/error.h — the one exception type for bad input, and the macros that throw it.
//
// Rules (the developers' style guide): PC_CHECK / PC_THROW for anything a user or a file can cause;
// the message names the file, tensor or line and what was expected. PC_ASSERT for
// internal invariants (a bug in perpcomp): it prints and aborts. Only tools/ catches.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace pc {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// Writing an output failed (no space, a file-size limit, permissions, an I/O error): the
// environment, not the input, is at fault, so a sweep stops here instead of going on to runs
// that would fail the same way.
class OutputError : public Error {
 public:
  explicit OutputError(const std::string& what) : Error(what) {}
};

// Concatenates any streamable values: Str("layer ", 3, ": got ", shape).
template <typename... Args>
std::string Str(Args&&... args) {
  if constexpr (sizeof...(Args) == 0) {
    return std::string();
  } else {
    std::ostringstream os;
    (os << ... << std::forward<Args>(args));
    return os.str();
  }
}

namespace detail {
[[noreturn]] void ThrowError(const std::string& message);
[[noreturn]] void ThrowOutputError(const std::string& message);
[[noreturn]] void AssertFail(const char* cond, const char* file, int line, const std::string& message);
}  // namespace detail

}  // namespace pc

// Throws pc::Error with the concatenated arguments.
#define PC_THROW(...) ::pc::detail::ThrowError(::pc::Str(__VA_ARGS__))

// Throws pc::Error with the concatenated arguments when `cond` is false.
#define PC_CHECK(cond, ...)                                   \
  do {                                                        \
    if (!(cond)) ::pc::detail::ThrowError(::pc::Str(__VA_ARGS__)); \
  } while (0)

// Throws pc::OutputError: for a failure to write, create or close an output.
#define PC_THROW_OUTPUT(...) ::pc::detail::ThrowOutputError(::pc::Str(__VA_ARGS__))

#define PC_CHECK_OUTPUT(cond, ...)                                       \
  do {                                                                   \
    if (!(cond)) ::pc::detail::ThrowOutputError(::pc::Str(__VA_ARGS__)); \
  } while (0)

// Internal invariant: aborts with file and line. Never for bad input.
#define PC_ASSERT(cond, ...)                                                          \
  do {                                                                                \
    if (!(cond)) ::pc::detail::AssertFail(#cond, __FILE__, __LINE__, ::pc::Str(__VA_ARGS__)); \
  } while (0)
