// model/tokenizer/utf8.h — UTF-8 helpers and the GPT-2 byte-level alphabet.
//
// Tokenizer input is valid UTF-8 (Encode checks it once); these helpers assume it.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace pc::tok {

// Length in bytes of the UTF-8 sequence starting with lead byte `c` (1 for invalid leads).
inline int Utf8Len(unsigned char c) {
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0) return 2;
  if ((c & 0xF0) == 0xE0) return 3;
  if ((c & 0xF8) == 0xF0) return 4;
  return 1;
}

// Decodes the code point at s[pos] (valid UTF-8) and advances pos.
uint32_t NextCodePoint(std::string_view s, size_t* pos);
// Code point of the last character of s (s not empty), and its byte length through `len`.
uint32_t LastCodePoint(std::string_view s, int* len);
void AppendUtf8(uint32_t cp, std::string* out);

// Unicode White_Space (as Rust's char::is_whitespace, which Hugging Face tokenizers uses).
bool IsWhitespace(uint32_t cp);
// Alphabetic or numeric, or '_' (the \w used by added tokens' single_word rule).
bool IsWordChar(uint32_t cp);

// Throws pc::Error naming `what` and the byte offset when `text` is not valid UTF-8.
void CheckUtf8(const std::string& text, const char* what);

// GPT-2's bytes_to_unicode(): every byte maps to one printable code point, as UTF-8.
// Printable Latin-1 bytes map to themselves; the others to U+0100 + n, in byte order.
class ByteLevelAlphabet {
 public:
  static const ByteLevelAlphabet& Get();
  const std::string& Encode(uint8_t byte) const { return byte_to_utf8_[byte]; }
  uint32_t CodePoint(uint8_t byte) const { return byte_to_cp_[byte]; }
  // The byte whose code point is `cp`, or -1 when `cp` is not in the alphabet.
  int Decode(uint32_t cp) const { return cp < cp_to_byte_.size() ? cp_to_byte_[cp] : -1; }
  // Maps every byte of `bytes` to its alphabet character.
  std::string EncodeBytes(std::string_view bytes) const;

 private:
  ByteLevelAlphabet();
  std::array<std::string, 256> byte_to_utf8_;
  std::array<uint32_t, 256> byte_to_cp_{};
  std::array<int16_t, 512> cp_to_byte_{};
};

}  // namespace pc::tok
