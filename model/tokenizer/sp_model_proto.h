// model/tokenizer/sp_model_proto.h — the few fields of a sentencepiece ModelProto that the
// libsentencepiece API does not expose (model type, normalizer flags, piece types).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pc::tok {

enum class SpPieceType { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };
enum class SpModelType { kUnigram = 1, kBpe = 2, kWord = 3, kChar = 4 };

struct SpPiece {
  std::string piece;
  float score = 0;
  SpPieceType type = SpPieceType::kNormal;
};

struct SpModelInfo {
  std::vector<SpPiece> pieces;
  SpModelType model_type = SpModelType::kUnigram;
  bool byte_fallback = false;
  bool treat_whitespace_as_suffix = false;
  std::string normalizer_name;        // "identity", "nmt_nfkc", ...
  bool has_precompiled_charsmap = false;
  bool add_dummy_prefix = true;
  bool remove_extra_whitespaces = true;
  bool escape_whitespaces = true;
};

// Parses the serialized ModelProto (protobuf wire format); errors name `where` and the byte offset.
SpModelInfo ParseSpModelProto(const std::string& bytes, const std::string& where);
const char* SpModelTypeName(SpModelType type);

}  // namespace pc::tok
