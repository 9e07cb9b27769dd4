// Fuzz target: sweep YAML parsing and grid expansion.
#include <cstddef>
#include <cstdint>
#include <string>

#include "recipes/sweep_spec.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  pc::fuzz::ExpectOnlyPcErrors([&] {
    auto s = pc::recipes::ParseSweepText(text, "fuzz.yaml", "/nonexistent-recipes");
    pc::recipes::ExpandSweep(s);
  });
  return 0;
}
