// model/tokenizer/decoder.h — tokenizer.json "decoder" section.
//
// Supported: ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip, Sequence. As in Hugging Face
// tokenizers, each decoder maps the list of token strings to a new list; the results are joined.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pc::tok {

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual void DecodeChain(std::vector<std::string>* tokens) const = 0;
};

// null json -> nullptr. Errors name `where` and list the supported types.
std::unique_ptr<Decoder> MakeDecoder(const nlohmann::json& spec, const std::string& where);

// Bytes -> valid UTF-8: every maximal invalid subpart becomes U+FFFD (as Rust's from_utf8_lossy).
std::string Utf8Lossy(const std::string& bytes);

}  // namespace pc::tok
