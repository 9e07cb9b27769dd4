#include "model/tokenizer/normalizer.h"

#include <unicode/bytestream.h>
#include <unicode/locid.h>
#include <unicode/normalizer2.h>
#include <unicode/uniset.h>
#include <unicode/unistr.h>

#include <memory>
#include <mutex>
#include <vector>

#include "core/error.h"
#include "model/tokenizer/regex.h"
#include "model/tokenizer/spec_util.h"
#include "model/tokenizer/utf8.h"

namespace pc::tok {

namespace {
bool IsAscii(const std::string& s) {
  for (unsigned char c : s) {
    if (c >= 0x80) return false;
  }
  return true;
}

// The ICU normalizer restricted to code points assigned in Unicode kHfNormalizationUnicode or
// earlier; later ones pass through unchanged and bound the normalized spans, as if unassigned.
// HF tokenizers' NFC/NFD/NFKC/NFKD use the Rust crate unicode-normalization-alignments, whose tables
// are Unicode 9.0 (measured against tokenizers 0.23: every combining mark of Unicode <= 9.0 is
// reordered, none of 10.0-14.0 is; U+11938 (13.0) is not decomposed). ICU 72 is Unicode 15.0, so
// without the filter e.g. U+0301 U+09FE reorders here and not in HF. See model/tokenizer/README.md.
constexpr const char* kHfNormalizationUnicode = "9.0";

const icu::Normalizer2& HfNormalizer(UnicodeForm form) {
  struct Filtered {
    icu::UnicodeSet assigned;
    std::unique_ptr<icu::FilteredNormalizer2> n;
  };
  static Filtered forms[4];
  static std::once_flag once;
  std::call_once(once, [] {
    const UnicodeForm all[4] = {UnicodeForm::kNfc, UnicodeForm::kNfd, UnicodeForm::kNfkc, UnicodeForm::kNfkd};
    for (int i = 0; i < 4; ++i) {
      UErrorCode status = U_ZERO_ERROR;
      const icu::Normalizer2* base = all[i] == UnicodeForm::kNfc    ? icu::Normalizer2::getNFCInstance(status)
                                     : all[i] == UnicodeForm::kNfd  ? icu::Normalizer2::getNFDInstance(status)
                                     : all[i] == UnicodeForm::kNfkc ? icu::Normalizer2::getNFKCInstance(status)
                                                                    : icu::Normalizer2::getNFKDInstance(status);
      PC_CHECK(U_SUCCESS(status), "ICU: cannot load the Unicode normalization data: ", u_errorName(status));
      std::string pattern = std::string("[:age=") + kHfNormalizationUnicode + ":]";
      forms[i].assigned.applyPattern(icu::UnicodeString::fromUTF8(pattern), status);
      PC_CHECK(U_SUCCESS(status), "ICU: cannot build the set ", pattern, ": ", u_errorName(status));
      forms[i].assigned.freeze();
      forms[i].n = std::make_unique<icu::FilteredNormalizer2>(*base, forms[i].assigned);
    }
  });
  return *forms[static_cast<int>(form)].n;
}
}  // namespace

void NormalizeUnicode(UnicodeForm form, std::string* text) {
  if (IsAscii(*text)) return;  // every form leaves ASCII unchanged
  const icu::Normalizer2* n = &HfNormalizer(form);
  UErrorCode status = U_ZERO_ERROR;
  icu::StringPiece source(text->data(), static_cast<int32_t>(text->size()));
  if (n->isNormalizedUTF8(source, status) && U_SUCCESS(status)) return;
  status = U_ZERO_ERROR;
  std::string out;
  out.reserve(text->size() + text->size() / 8);
  icu::StringByteSink<std::string> sink(&out);
  n->normalizeUTF8(0, source, sink, nullptr, status);
  PC_CHECK(U_SUCCESS(status), "ICU: Unicode normalization failed: ", u_errorName(status));
  text->swap(out);
}

namespace {

class UnicodeNormalizer : public Normalizer {
 public:
  explicit UnicodeNormalizer(UnicodeForm form) : form_(form) {}
  void Normalize(std::string* text) const override { NormalizeUnicode(form_, text); }

 private:
  UnicodeForm form_;
};

class Lowercase : public Normalizer {
 public:
  void Normalize(std::string* text) const override {
    if (IsAscii(*text)) {
      for (char& c : *text) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
      return;
    }
    icu::UnicodeString u = icu::UnicodeString::fromUTF8(*text);
    u.toLower(icu::Locale::getRoot());
    text->clear();
    u.toUTF8String(*text);
  }
};

class Prepend : public Normalizer {
 public:
  explicit Prepend(std::string prefix) : prefix_(std::move(prefix)) {}
  void Normalize(std::string* text) const override {
    if (!text->empty()) text->insert(0, prefix_);  // as HF: nothing is prepended to an empty string
  }

 private:
  std::string prefix_;
};

class Replace : public Normalizer {
 public:
  Replace(Pattern pattern, std::string content) : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void Normalize(std::string* text) const override {
    std::vector<Span> spans = pattern_.FindAll(*text);
    if (spans.empty()) return;
    std::string out;
    out.reserve(text->size() + spans.size() * content_.size());
    size_t pos = 0;
    for (const auto& [start, end] : spans) {
      out.append(*text, pos, start - pos);
      out += content_;
      pos = end;
    }
    out.append(*text, pos, std::string::npos);
    text->swap(out);
  }

 private:
  Pattern pattern_;
  std::string content_;
};

class Strip : public Normalizer {
 public:
  Strip(bool left, bool right) : left_(left), right_(right) {}
  void Normalize(std::string* text) const override {
    if (right_) {
      while (!text->empty()) {
        int len = 0;
        if (!IsWhitespace(LastCodePoint(*text, &len))) break;
        text->resize(text->size() - len);
      }
    }
    if (left_) {
      size_t pos = 0, keep = 0;
      while (pos < text->size() && IsWhitespace(NextCodePoint(*text, &pos))) keep = pos;
      text->erase(0, keep);
    }
  }

 private:
  bool left_, right_;
};

class Sequence : public Normalizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Normalizer>> parts) : parts_(std::move(parts)) {}
  void Normalize(std::string* text) const override {
    for (const auto& p : parts_) p->Normalize(text);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
};

}  // namespace

std::unique_ptr<Normalizer> MakeNormalizer(const nlohmann::json& spec, const std::string& where) {
  if (spec.is_null()) return nullptr;
  std::string type = SpecType(spec, where);
  if (type == "NFC") return std::make_unique<UnicodeNormalizer>(UnicodeForm::kNfc);
  if (type == "NFD") return std::make_unique<UnicodeNormalizer>(UnicodeForm::kNfd);
  if (type == "NFKC") return std::make_unique<UnicodeNormalizer>(UnicodeForm::kNfkc);
  if (type == "NFKD") return std::make_unique<UnicodeNormalizer>(UnicodeForm::kNfkd);
  if (type == "Lowercase") return std::make_unique<Lowercase>();
  if (type == "Prepend") return std::make_unique<Prepend>(SpecString(spec, "prepend", "", where));
  if (type == "Replace") {
    return std::make_unique<Replace>(SpecPattern(spec, "pattern", where), SpecString(spec, "content", "", where));
  }
  if (type == "Strip") {
    return std::make_unique<Strip>(SpecBool(spec, "strip_left", true, where), SpecBool(spec, "strip_right", true, where));
  }
  if (type == "Sequence") {
    const auto& list = SpecArray(spec, "normalizers", where);
    std::vector<std::unique_ptr<Normalizer>> parts;
    for (size_t i = 0; i < list.size(); ++i) {
      auto part = MakeNormalizer(list[i], Str(where, ".normalizers[", i, "]"));
      if (part != nullptr) parts.push_back(std::move(part));
    }
    return std::make_unique<Sequence>(std::move(parts));
  }
  ThrowUnsupported("normalizer", type, where,
                   {"NFC", "NFD", "NFKC", "NFKD", "Lowercase", "Prepend", "Replace", "Strip", "Sequence"});
}

}  // namespace pc::tok
