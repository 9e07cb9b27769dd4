// model/tokenizer/sp_model_proto.h — a reader of sentencepiece's tokenizer.model (a serialized
// ModelProto, protobuf wire format) without libsentencepiece: the pieces with scores and types, the
// model type, the normalizer flags and the special pieces. pc_tokenizer reads tokenizer.model only
// through this (README.md: libsentencepiece cannot share a process with LibTorch on Debian 12).
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
  // trainer_spec: the special pieces' names (sentencepiece's defaults when unset or empty) and the ids
  // training gave them (proto defaults 0, 1, 2 when absent; -1 = disabled).
  std::string unk_piece = "<unk>", bos_piece = "<s>", eos_piece = "</s>";
  int32_t trainer_unk_id = 0, trainer_bos_id = 1, trainer_eos_id = 2;
};

// Special ids as libsentencepiece's unk_id()/bos_id()/eos_id() give them: unk = the UNKNOWN piece;
// bos/eos = the piece named bos_piece/eos_piece when it is a CONTROL piece, else -1.
struct SpSpecialIds {
  int32_t unk = -1, bos = -1, eos = -1;
};
SpSpecialIds FindSpSpecialIds(const SpModelInfo& info);

// Parses the serialized ModelProto (protobuf wire format); errors name `where` and the byte offset.
// Also checks what libsentencepiece checks at load: pieces are non-empty and there is exactly one
// UNKNOWN piece.
SpModelInfo ParseSpModelProto(const std::string& bytes, const std::string& where);
const char* SpModelTypeName(SpModelType type);

}  // namespace pc::tok
