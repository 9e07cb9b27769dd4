// model/tokenizer/normalizer.h — tokenizer.json "normalizer" section.
//
// Supported: NFC, NFD, NFKC, NFKD (ICU), Lowercase, Prepend, Replace, Strip, Sequence.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace pc::tok {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // Normalizes valid UTF-8 in place.
  virtual void Normalize(std::string* text) const = 0;
};

// null json -> nullptr. Errors name `where` ("tokenizer.json: normalizer") and list the supported types.
std::unique_ptr<Normalizer> MakeNormalizer(const nlohmann::json& spec, const std::string& where);

// Unicode normalization forms through ICU, restricted to Unicode 9.0 as Hugging Face tokenizers'
// tables (code points assigned later pass through unchanged, as unassigned ones); ASCII text returns
// unchanged without a copy.
enum class UnicodeForm { kNfc, kNfd, kNfkc, kNfkd };
void NormalizeUnicode(UnicodeForm form, std::string* text);

}  // namespace pc::tok
