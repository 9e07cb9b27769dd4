// tests/fuzz/fuzz_util.h — helpers for the libFuzzer targets.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/log.h"

namespace pc::fuzz {

// Warnings about odd but accepted input (e.g. a tokenizer without byte tokens) would print on
// most executions and slow the fuzzer down; every target includes this header, so they are off.
inline const bool kQuietLogs = (pc::log::SetLevel(pc::log::Level::kQuiet), true);

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

// A per-process scratch file in /dev/shm (or /tmp), removed when the process exits normally.
inline std::string ScratchPath(const std::string& name) {
  struct Remover {
    std::vector<std::string> paths;
    ~Remover() {
      for (const auto& p : paths) unlink(p.c_str());
    }
  };
  static Remover remover;
  const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  remover.paths.push_back(std::string(dir) + "/pc-fuzz-" + std::to_string(getpid()) + "-" + name);
  return remover.paths.back();
}

inline void WriteScratch(const std::string& path, const uint8_t* data, size_t size) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
}

}  // namespace pc::fuzz
