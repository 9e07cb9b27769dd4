// Fuzz target: BLiMP JSON-lines minimal-pair files.
#include <cstddef>
#include <cstdint>
#include <string>

#include "metrics/pairs_file.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  pc::fuzz::ExpectOnlyPcErrors([&] { pc::ParseMinimalPairs(text, "fuzz.jsonl"); });
  return 0;
}
