// Fuzz target: the GGUF reader. Input: a whole GGUF file. The header is parsed and validated; then
// the first blocks (at most 4096 elements) of every tensor of a dequantizable type are decoded, so
// that the decoders run on whatever bytes the validated ranges hold.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/gguf_format.h"
#include "model/gguf_quants.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  pc::fuzz::ExpectOnlyPcErrors([&] {
    pc::GgufHeader h = pc::ParseGgufHeader(data, size, "fuzz.gguf");
    std::vector<float> out;
    for (const auto& t : h.tensors) {
      const pc::GgmlTypeInfo& info = pc::GgmlInfo(t.type);
      if (!info.dequantizable) continue;
      const int64_t n = std::min<int64_t>(t.elements, 4096) / info.block_size * info.block_size;
      out.resize(n);
      pc::DequantizeGgml(t.type, data + h.data_offset + t.offset, n, out.data());
    }
  });
  return 0;
}
