#include "model/tokenizer/sentencepiece_tokenizer.h"

#include <sentencepiece_processor.h>

#include <string_view>
#include <unordered_map>

#include "core/error.h"
#include "core/fs.h"
#include "model/tokenizer/libsentencepiece.h"
#include "model/tokenizer/utf8.h"

namespace pc::tok {

SentencePieceTokenizer::SentencePieceTokenizer(const std::string& model_path)
    : Tokenizer("sentencepiece-model"), path_(model_path) {
  PC_CHECK(fs::Exists(model_path), "'", model_path, "' does not exist");
  sentencepiece_model_ = fs::ReadFile(model_path);
  info_ = ParseSpModelProto(sentencepiece_model_, model_path);
  sp_ = std::make_unique<sentencepiece::SentencePieceProcessor>();
  auto status = sp_->LoadFromSerializedProto(sentencepiece_model_);
  PC_CHECK(status.ok(), model_path, ": sentencepiece cannot load the model: ", status.ToString());
  PC_CHECK(static_cast<size_t>(sp_->GetPieceSize()) == info_.pieces.size(), model_path, ": sentencepiece reports ",
           sp_->GetPieceSize(), " pieces, the file holds ", info_.pieces.size());
  bos_id_ = sp_->bos_id();
  eos_id_ = sp_->eos_id();
  unk_id_ = sp_->unk_id();
  if (bos_id_ >= 0) prefix_ids_ = {bos_id_};
  std::vector<AddedToken> specials;
  for (int32_t id = 0; id < sp_->GetPieceSize(); ++id) {
    if (sp_->IsControl(id) || sp_->IsUnknown(id)) {
      AddedToken t;
      t.content = sp_->IdToPiece(id);
      t.id = id;
      t.special = true;
      if (!t.content.empty()) specials.push_back(std::move(t));
    }
  }
  specials_ = AddedVocabulary(std::move(specials), nullptr);
  cut_at_spaces_ = info_.add_dummy_prefix && !info_.remove_extra_whitespaces && info_.escape_whitespaces &&
                   !info_.treat_whitespace_as_suffix && !info_.has_precompiled_charsmap &&
                   (info_.normalizer_name.empty() || info_.normalizer_name == "identity");
  const std::string metaspace = "\xE2\x96\x81";
  // sentencepiece fuses adjacent unknown pieces: a part after a cut must not start with an unknown "▁".
  bool metaspace_known = info_.byte_fallback;
  for (const SpPiece& p : info_.pieces) {
    metaspace_known = metaspace_known || (p.piece == metaspace && p.type == SpPieceType::kNormal);
  }
  cut_at_spaces_ = cut_at_spaces_ && metaspace_known;
  for (const SpPiece& p : info_.pieces) {
    for (size_t pos = p.piece.find(metaspace, 1); cut_at_spaces_ && pos != std::string::npos;
         pos = p.piece.find(metaspace, pos + 1)) {
      if (pos < metaspace.size() || p.piece.compare(pos - metaspace.size(), metaspace.size(), metaspace) != 0) {
        cut_at_spaces_ = false;
      }
    }
  }
  CheckSpecialIds(model_path);
}

SentencePieceTokenizer::~SentencePieceTokenizer() = default;

std::vector<int32_t> SentencePieceTokenizer::Encode(const std::string& text) const {
  CheckUtf8(text, "Encode");
  std::vector<int32_t> ids;
  for (const Piece& p : specials_.SplitAndNormalize(text, nullptr)) {
    if (p.id >= 0) {
      ids.push_back(p.id);
    } else {
      EncodePlain(p.text, &ids);
    }
  }
  return ids;
}

void SentencePieceTokenizer::EncodePlain(const std::string& text, std::vector<int32_t>* ids) const {
  std::vector<int> piece_ids;
  auto encode = [&](std::string_view chunk) {
    auto status = sp_->Encode(chunk, &piece_ids);
    PC_CHECK(status.ok(), path_, ": sentencepiece Encode failed: ", status.ToString());
    ids->insert(ids->end(), piece_ids.begin(), piece_ids.end());
  };
  if (!cut_at_spaces_) {
    encode(text);
    return;
  }
  // Words recur: each distinct chunk goes through sentencepiece once per call.
  std::unordered_map<std::string_view, std::vector<int32_t>> cache;
  std::string_view all(text);
  size_t start = 0;  // chunks after the first begin right after the space they were cut at
  while (start < all.size()) {
    size_t cut = all.size();
    for (size_t i = all.find(' ', start + 1); i != std::string_view::npos; i = all.find(' ', i + 1)) {
      if (all[i - 1] != ' ' && i + 1 < all.size()) {  // (a cut at a final space would lose it)
        cut = i;
        break;
      }
    }
    std::string_view chunk = all.substr(start, cut - start);
    auto it = cache.find(chunk);
    if (it == cache.end()) {
      size_t before = ids->size();
      encode(chunk);
      it = cache.emplace(chunk, std::vector<int32_t>(ids->begin() + before, ids->end())).first;
    } else {
      ids->insert(ids->end(), it->second.begin(), it->second.end());
    }
    start = cut + 1;
  }
}

std::string SentencePieceTokenizer::Decode(const std::vector<int32_t>& ids, bool skip_special) const {
  std::string out, part;
  std::vector<int> run;  // ids between special ones, decoded together by sentencepiece
  auto flush = [&] {
    if (run.empty()) return;
    auto status = sp_->Decode(run, &part);
    PC_CHECK(status.ok(), path_, ": sentencepiece Decode failed: ", status.ToString());
    out += part;
    run.clear();
  };
  for (int32_t id : ids) {
    PC_CHECK(id >= 0 && id < vocab_size(), "Decode: id ", id, " is out of range (vocab_size ", vocab_size(), ")");
    if (IsSpecial(id)) {
      if (skip_special) continue;
      flush();
      out += sp_->IdToPiece(id);
    } else {
      run.push_back(id);
    }
  }
  flush();
  return out;
}

int32_t SentencePieceTokenizer::vocab_size() const { return sp_->GetPieceSize(); }

std::string SentencePieceTokenizer::IdToPiece(int32_t id) const {
  PC_CHECK(id >= 0 && id < vocab_size(), "IdToPiece: id ", id, " is out of range (vocab_size ", vocab_size(), ")");
  return sp_->IdToPiece(id);
}

int32_t SentencePieceTokenizer::PieceToId(const std::string& piece) const {
  int32_t id = sp_->PieceToId(piece);  // sentencepiece answers unk_id for unknown pieces
  return id >= 0 && sp_->IdToPiece(id) == piece ? id : -1;
}

bool SentencePieceTokenizer::IsSpecial(int32_t id) const {
  return id >= 0 && id < vocab_size() && (sp_->IsControl(id) || sp_->IsUnknown(id));
}

}  // namespace pc::tok

namespace pc {

std::unique_ptr<Tokenizer> LoadSentencePieceModel(const std::string& path) {
  return std::make_unique<tok::SentencePieceTokenizer>(path);
}

}  // namespace pc
