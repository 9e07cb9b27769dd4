// model/tokenizer/bpe_tokenizer.h — a tokenizer.json whose model is BPE (Hugging Face tokenizers).
//
// Pipeline (as tokenizers' TokenizerImpl::encode): added tokens split off, normalizer, pre-tokenizer,
// BPE model per word; the post-processor only sets prefix_ids()/suffix_ids(). No truncation/padding.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/tokenizer/added_vocab.h"
#include "model/tokenizer/bpe_model.h"
#include "model/tokenizer/decoder.h"
#include "model/tokenizer/normalizer.h"
#include "model/tokenizer/pre_tokenizer.h"
#include "model/tokenizer/sp_model_proto.h"
#include "model/tokenizer/tokenizer.h"

namespace pc::tok {

// The files beside a tokenizer.json that can settle bos/eos/unk (null json when absent).
struct FolderConfig {
  nlohmann::json tokenizer_config;  // tokenizer_config.json: bos_token, eos_token, unk_token
  nlohmann::json model_config;      // config.json: bos_token_id, eos_token_id
  std::string folder;
};
FolderConfig ReadFolderConfig(const std::string& folder);

class BpeTokenizer : public Tokenizer {
 public:
  // `doc`: a parsed tokenizer.json; `where` names it in messages. Special ids: the post-processor's
  // template first, then `folder` (tokenizer_config.json, config.json), then well-known names
  // (<s>, </s>, <|endoftext|>, ...) among the special added tokens.
  BpeTokenizer(nlohmann::json doc, const std::string& where, const FolderConfig* folder = nullptr);

  std::vector<int32_t> Encode(const std::string& text) const override;
  std::string Decode(const std::vector<int32_t>& ids, bool skip_special = true) const override;
  int32_t vocab_size() const override { return static_cast<int32_t>(id_to_piece_.size()); }
  std::string IdToPiece(int32_t id) const override;
  int32_t PieceToId(const std::string& piece) const override;
  bool IsSpecial(int32_t id) const override;

  // The tokenizer.json document (sections in Hugging Face's order, vocab in id order).
  nlohmann::ordered_json ToJson() const;
  const BpeModel& model() const { return *model_; }
  const std::vector<AddedToken>& added_tokens() const { return added_.tokens(); }

  // For the tokenizer.json form of a sentencepiece model, while it is being built: keeps the model's
  // bytes (sentencepiece_model()) and takes bos/eos/unk as libsentencepiece gives them.
  void AdoptSentencePieceModel(std::string bytes, const SpSpecialIds& ids, const std::string& where);

 private:
  void BuildIdTable(const std::vector<AddedToken>& added, const std::string& where);
  void SetKind(const std::string& where);
  void ResolveSpecialIds(const FolderConfig* folder, const std::string& where);

  nlohmann::json doc_;  // the document without model.vocab and model.merges (written back by ToJson)
  std::unique_ptr<BpeModel> model_;
  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::unique_ptr<Decoder> decoder_;
  AddedVocabulary added_;
  std::vector<std::string> id_to_piece_;  // every id in [0, vocab_size)
  std::vector<bool> special_;
  std::unordered_map<std::string, int32_t> added_ids_;  // added tokens by content
};

}  // namespace pc::tok
