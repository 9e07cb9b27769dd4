// Fuzz target: the safetensors header parser. Input: 8 bytes (the data size) + header JSON.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>

#include "model/safetensors_format.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 8) return 0;
  uint64_t data_size = 0;
  std::memcpy(&data_size, data, 8);
  std::string header(reinterpret_cast<const char*>(data + 8), size - 8);
  pc::fuzz::ExpectOnlyPcErrors([&] {
    std::map<std::string, std::string> meta;
    pc::ParseSafetensorsHeader(header, data_size, "fuzz.safetensors", &meta);
  });
  return 0;
}
