#include "model/tokenizer/utf8.h"

#include <unicode/uchar.h>

#include "core/error.h"
#include "core/text.h"

namespace pc::tok {

uint32_t NextCodePoint(std::string_view s, size_t* pos) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data()) + *pos;
  int len = Utf8Len(p[0]);
  if (*pos + len > s.size()) len = 1;  // truncated: one byte at a time
  uint32_t cp = len == 1 ? p[0] : len == 2 ? (p[0] & 0x1F) : len == 3 ? (p[0] & 0x0F) : (p[0] & 0x07);
  for (int k = 1; k < len; ++k) cp = (cp << 6) | (p[k] & 0x3F);
  *pos += len;
  return cp;
}

uint32_t LastCodePoint(std::string_view s, int* len) {
  size_t start = s.size() - 1;
  while (start > 0 && s.size() - start < 4 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
  size_t pos = start;
  uint32_t cp = NextCodePoint(s, &pos);
  *len = static_cast<int>(s.size() - start);
  return cp;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool IsWhitespace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
         cp == 0x3000;
}

bool IsWordChar(uint32_t cp) {
  if (cp < 0x80) return (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || cp == '_';
  auto c = static_cast<UChar32>(cp);
  int type = u_charType(c);
  return u_isUAlphabetic(c) || type == U_DECIMAL_DIGIT_NUMBER || type == U_LETTER_NUMBER || type == U_OTHER_NUMBER;
}

void CheckUtf8(const std::string& text, const char* what) {
  size_t bad = FindInvalidUtf8(text);
  PC_CHECK(bad == std::string::npos, what, ": the text is not valid UTF-8 (invalid byte 0x", std::hex,
           static_cast<int>(static_cast<unsigned char>(text[bad])), std::dec, " at byte offset ", bad, ")");
}

ByteLevelAlphabet::ByteLevelAlphabet() {
  cp_to_byte_.fill(-1);
  int next = 0;
  for (int b = 0; b < 256; ++b) {
    bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    uint32_t cp = printable ? static_cast<uint32_t>(b) : 256 + next++;
    byte_to_cp_[b] = cp;
    cp_to_byte_[cp] = static_cast<int16_t>(b);
    AppendUtf8(cp, &byte_to_utf8_[b]);
  }
}

const ByteLevelAlphabet& ByteLevelAlphabet::Get() {
  static const ByteLevelAlphabet alphabet;
  return alphabet;
}

std::string ByteLevelAlphabet::EncodeBytes(std::string_view bytes) const {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) out += byte_to_utf8_[b];
  return out;
}

}  // namespace pc::tok
