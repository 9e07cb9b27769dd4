// Fuzz target: config.json validation against the architecture tables.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/json_util.h"
#include "model/config.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  pc::fuzz::ExpectOnlyPcErrors([&] { pc::ParseModelConfig(pc::ParseJson(text, "config.json"), "config.json"); });
  return 0;
}
