#include "model/tokenizer/sp_model_proto.h"

#include <cstring>
#include <string_view>

#include "core/error.h"

namespace pc::tok {

namespace {

// A protobuf wire-format reader over one message.
class WireReader {
 public:
  WireReader(std::string_view bytes, size_t base, const std::string& where)
      : data_(bytes), base_(base), where_(where) {}
  bool Done() const { return pos_ >= data_.size(); }
  // Reads a key: field number and wire type.
  void Key(uint32_t* field, uint32_t* wire) {
    uint64_t key = Varint();
    *field = static_cast<uint32_t>(key >> 3);
    *wire = static_cast<uint32_t>(key & 7);
  }
  uint64_t Varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      Need(1);
      auto b = static_cast<uint8_t>(data_[pos_++]);
      v |= static_cast<uint64_t>(b & 0x7F) << shift;
      if ((b & 0x80) == 0) return v;
    }
    Fail("varint longer than 10 bytes");
  }
  std::string_view Bytes(size_t* offset) {
    uint64_t n = Varint();
    Need(n);
    *offset = base_ + pos_;
    std::string_view s = data_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  float Float() {
    Need(4);
    float f;
    std::memcpy(&f, data_.data() + pos_, 4);
    pos_ += 4;
    return f;
  }
  void Skip(uint32_t wire) {
    size_t unused;
    switch (wire) {
      case 0: Varint(); break;
      case 1: Need(8); pos_ += 8; break;
      case 2: Bytes(&unused); break;
      case 5: Need(4); pos_ += 4; break;
      default: Fail(Str("unsupported wire type ", wire));
    }
  }
  [[noreturn]] void Fail(const std::string& what) const {
    PC_THROW(where_, ": not a sentencepiece model (malformed protobuf at byte ", base_ + pos_, ": ", what, ")");
  }

 private:
  void Need(uint64_t n) const {
    if (n > data_.size() - pos_) Fail("truncated");
  }
  std::string_view data_;
  size_t base_, pos_ = 0;
  const std::string& where_;
};

SpPiece ParsePiece(std::string_view bytes, size_t base, const std::string& where) {
  SpPiece p;
  WireReader r(bytes, base, where);
  while (!r.Done()) {
    uint32_t field, wire;
    r.Key(&field, &wire);
    size_t offset;
    if (field == 1 && wire == 2) {
      p.piece = std::string(r.Bytes(&offset));
    } else if (field == 2 && wire == 5) {
      p.score = r.Float();
    } else if (field == 3 && wire == 0) {
      uint64_t t = r.Varint();
      if (t < 1 || t > 6) r.Fail(Str("unknown piece type ", t));
      p.type = static_cast<SpPieceType>(t);
    } else {
      r.Skip(wire);
    }
  }
  return p;
}

void ParseTrainerSpec(std::string_view bytes, size_t base, const std::string& where, SpModelInfo* info) {
  WireReader r(bytes, base, where);
  while (!r.Done()) {
    uint32_t field, wire;
    r.Key(&field, &wire);
    if (field == 3 && wire == 0) {
      uint64_t t = r.Varint();
      if (t < 1 || t > 4) r.Fail(Str("unknown model type ", t));
      info->model_type = static_cast<SpModelType>(t);
    } else if (field == 35 && wire == 0) {
      info->byte_fallback = r.Varint() != 0;
    } else if (field == 24 && wire == 0) {
      info->treat_whitespace_as_suffix = r.Varint() != 0;
    } else if (field >= 40 && field <= 42 && wire == 0) {  // unk_id, bos_id, eos_id (int32)
      auto id = static_cast<int32_t>(r.Varint());
      (field == 40 ? info->trainer_unk_id : field == 41 ? info->trainer_bos_id : info->trainer_eos_id) = id;
    } else if (field >= 45 && field <= 47 && wire == 2) {  // unk_piece, bos_piece, eos_piece
      size_t offset;
      std::string name(r.Bytes(&offset));
      if (!name.empty()) (field == 45 ? info->unk_piece : field == 46 ? info->bos_piece : info->eos_piece) = name;
    } else {
      r.Skip(wire);
    }
  }
}

void ParseNormalizerSpec(std::string_view bytes, size_t base, const std::string& where, SpModelInfo* info) {
  WireReader r(bytes, base, where);
  while (!r.Done()) {
    uint32_t field, wire;
    r.Key(&field, &wire);
    size_t offset;
    if (field == 1 && wire == 2) {
      info->normalizer_name = std::string(r.Bytes(&offset));
    } else if (field == 2 && wire == 2) {
      info->has_precompiled_charsmap = !r.Bytes(&offset).empty();
    } else if (field == 3 && wire == 0) {
      info->add_dummy_prefix = r.Varint() != 0;
    } else if (field == 4 && wire == 0) {
      info->remove_extra_whitespaces = r.Varint() != 0;
    } else if (field == 5 && wire == 0) {
      info->escape_whitespaces = r.Varint() != 0;
    } else {
      r.Skip(wire);
    }
  }
}

}  // namespace

SpModelInfo ParseSpModelProto(const std::string& bytes, const std::string& where) {
  SpModelInfo info;
  WireReader r(bytes, 0, where);
  while (!r.Done()) {
    uint32_t field, wire;
    r.Key(&field, &wire);
    size_t offset = 0;
    if (field == 1 && wire == 2) {
      std::string_view m = r.Bytes(&offset);
      info.pieces.push_back(ParsePiece(m, offset, where));
    } else if (field == 2 && wire == 2) {
      std::string_view m = r.Bytes(&offset);
      ParseTrainerSpec(m, offset, where, &info);
    } else if (field == 3 && wire == 2) {
      std::string_view m = r.Bytes(&offset);
      ParseNormalizerSpec(m, offset, where, &info);
    } else {
      r.Skip(wire);
    }
  }
  PC_CHECK(!info.pieces.empty(), where, ": not a sentencepiece model (no pieces)");
  int32_t unknown = -1;
  for (size_t i = 0; i < info.pieces.size(); ++i) {
    PC_CHECK(!info.pieces[i].piece.empty(), where, ": piece ", i, " is empty (sentencepiece forbids that)");
    if (info.pieces[i].type != SpPieceType::kUnknown) continue;
    PC_CHECK(unknown < 0, where, ": pieces ", unknown, " and ", i,
             " are both UNKNOWN (sentencepiece needs exactly one)");
    unknown = static_cast<int32_t>(i);
  }
  PC_CHECK(unknown >= 0, where, ": no piece has type UNKNOWN (sentencepiece needs exactly one, usually <unk>)");
  return info;
}

SpSpecialIds FindSpSpecialIds(const SpModelInfo& info) {
  // sentencepiece's PieceToId: the piece's id, else the unknown piece's id.
  int32_t unknown = -1;
  for (size_t i = 0; i < info.pieces.size() && unknown < 0; ++i) {
    if (info.pieces[i].type == SpPieceType::kUnknown) unknown = static_cast<int32_t>(i);
  }
  auto find = [&](const std::string& name, SpPieceType type) {
    int32_t id = unknown;
    for (size_t i = 0; i < info.pieces.size(); ++i) {
      if (info.pieces[i].piece == name) {
        id = static_cast<int32_t>(i);
        break;
      }
    }
    return id >= 0 && info.pieces[id].type == type ? id : -1;
  };
  SpSpecialIds ids;
  ids.unk = find(info.unk_piece, SpPieceType::kUnknown);
  ids.bos = find(info.bos_piece, SpPieceType::kControl);
  ids.eos = find(info.eos_piece, SpPieceType::kControl);
  return ids;
}

const char* SpModelTypeName(SpModelType type) {
  switch (type) {
    case SpModelType::kUnigram: return "UNIGRAM";
    case SpModelType::kBpe: return "BPE";
    case SpModelType::kWord: return "WORD";
    case SpModelType::kChar: return "CHAR";
  }
  return "?";
}

}  // namespace pc::tok
