// Fuzz target: tokenizer.json loading (then encoding and decoding a fixed text).
#include <cstddef>
#include <cstdint>
#include <string>

#include "model/tokenizer/tokenizer.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = pc::fuzz::ScratchPath("tokenizer.json");
  pc::fuzz::WriteScratch(path, data, size);
  pc::fuzz::ExpectOnlyPcErrors([&] {
    auto tok = pc::LoadTokenizer(path);
    auto ids = tok->Encode("Hello world, <|endoftext|> caf\xc3\xa9 12345 \xe2\x96\x81x");
    tok->Decode(ids);
  });
  return 0;
}
