// tests/tokenizer/tok_test_util.h — shared helpers of the tokenizer tests.
#pragma once

#include <string>
#include <vector>

namespace pc::test {

struct TokenizerVector {
  std::string text;
  std::vector<int32_t> ids;
};

// vectors.inp / vectors.out of a folder under ../shared/data/tokenizers (CONVENTIONS.md format).
std::vector<TokenizerVector> ReadTokenizerVectors(const std::string& folder);
// Writes bytes to a file (test fixtures).
void WriteFileBytes(const std::string& path, const std::string& bytes);
std::string IdsString(const std::vector<int32_t>& ids);
// A few lines of WikiText-2 test (non-empty ones), or {} when the shared data is absent.
std::vector<std::string> WikiTextLines(size_t max_lines);
// Texts that exercise spaces, newlines, digits, punctuation and non-ASCII scripts.
std::vector<std::string> TrickyTexts();

}  // namespace pc::test

namespace pc::test {
// Deterministic random valid UTF-8: ASCII, Latin, combining marks, CJK, emoji, controls, spaces.
std::string RandomUtf8(uint32_t seed, int max_chars);
}  // namespace pc::test
