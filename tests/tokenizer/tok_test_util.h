// tests/tokenizer/tok_test_util.h — shared helpers of the tokenizer tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pc {
class Tokenizer;
}

namespace pc::test {

struct TokenizerVector {
  std::string text;
  std::vector<int32_t> ids;
};

// vectors.inp / vectors.out of a folder under ../shared/data/tokenizers (../shared/data/tokenizers/README.md format).
std::vector<TokenizerVector> ReadTokenizerVectors(const std::string& folder);
// Writes bytes to a file (test fixtures).
void WriteFileBytes(const std::string& path, const std::string& bytes);
std::string IdsString(const std::vector<int32_t>& ids);
// A few lines of WikiText-2 test (non-empty ones), or {} when the shared data is absent.
std::vector<std::string> WikiTextLines(size_t max_lines);
// Texts that exercise spaces, newlines, digits, punctuation and non-ASCII scripts.
std::vector<std::string> TrickyTexts();

// Checks two tokenizers agree: sizes, special ids, pieces, and Encode/Decode on TrickyTexts, 100
// WikiText lines and typed special tokens. compare_special_decode false: Decode(ids, false) is not
// compared (libsentencepiece decodes the text after each special token without its dummy-prefix
// space, the tokenizer.json form keeps it, as Hugging Face's fast Llama tokenizer does).
void CheckSameTokenizer(const Tokenizer& a, const Tokenizer& b, bool compare_special_decode = true);

// Protobuf wire format, enough to write small sentencepiece ModelProtos.
std::string ProtoVarint(uint64_t v);
std::string ProtoBytes(int field, const std::string& bytes);  // a length-delimited field
std::string ProtoInt(int field, int64_t v);                    // a varint field (int32 -1 as protobuf writes it)
// One ModelProto.pieces entry (type: 1 normal, 2 unknown, 3 control, 4 user-defined, 6 byte).
std::string SpPieceProto(const std::string& piece, float score, int type);
// normalizer_spec: `name`, add_dummy_prefix, remove_extra_whitespaces=false (Llama's, with "identity").
std::string SpNormalizerProto(const std::string& name = "identity");
// A small model: <unk> <s> </s> ▁ a b ▁a ab ▁ab (ids 0..8, scores favour ▁ab, ▁a, then ab), with
// trainer_spec.model_type = model_type (1 UNIGRAM, 2 BPE) followed by `trainer_extra`.
std::string SpSmallModel(int model_type, const std::string& trainer_extra = "",
                         const std::string& normalizer = SpNormalizerProto());

}  // namespace pc::test

namespace pc::test {
// Deterministic random valid UTF-8: ASCII, Latin, combining marks, CJK, emoji, controls, spaces.
std::string RandomUtf8(uint32_t seed, int max_chars);
}  // namespace pc::test
