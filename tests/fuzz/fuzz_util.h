// tests/fuzz/fuzz_util.h — helpers for the libFuzzer targets.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "core/error.h"

namespace pc::fuzz {

// Runs `fn`; pc::Error (a clear message for bad input) is the expected outcome for hostile
// input; any other exception is a finding: abort so libFuzzer records the input.
template <typename Fn>
void ExpectOnlyPcErrors(Fn fn) {
  try {
    fn();
  } catch (const pc::Error&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz finding: unexpected exception: %s\n", e.what());
    std::abort();
  }
}

// A per-process scratch file in /dev/shm (or /tmp).
inline std::string ScratchPath(const std::string& name) {
  const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  return std::string(dir) + "/pc-fuzz-" + std::to_string(getpid()) + "-" + name;
}

inline void WriteScratch(const std::string& path, const uint8_t* data, size_t size) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
}

}  // namespace pc::fuzz
