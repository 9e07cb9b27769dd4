#include "model/tokenizer/bpe_tokenizer.h"

#include <algorithm>

#include "core/error.h"
#include "core/fs.h"
#include "core/json_util.h"
#include "core/log.h"
#include "model/tokenizer/post_processor.h"
#include "model/tokenizer/spec_util.h"
#include "model/tokenizer/utf8.h"

namespace pc::tok {

FolderConfig ReadFolderConfig(const std::string& folder) {
  FolderConfig config;
  config.folder = folder;
  std::string tc = fs::Join(folder, "tokenizer_config.json"), mc = fs::Join(folder, "config.json");
  if (fs::Exists(tc)) config.tokenizer_config = LoadJsonFile(tc);
  if (fs::Exists(mc)) config.model_config = LoadJsonFile(mc);
  return config;
}

namespace {

std::vector<std::pair<std::string, int32_t>> ParseVocab(const nlohmann::json& model, const std::string& where) {
  auto it = model.find("vocab");
  PC_CHECK(it != model.end(), where, ": missing model.vocab");
  PC_CHECK(it->is_object(), where, ": model.vocab must be an object {token: id}, got ", it->type_name());
  std::vector<std::pair<std::string, int32_t>> vocab;
  vocab.reserve(it->size());
  for (auto e = it->begin(); e != it->end(); ++e) {
    PC_CHECK(e.value().is_number_integer(), where, ": model.vocab['", e.key(), "'] must be an integer id, got ",
             e.value().dump());
    int64_t id = e.value().get<int64_t>();
    PC_CHECK(id >= 0 && id < (int64_t{1} << 31), where, ": model.vocab['", e.key(), "'] has id ", id,
             " out of range");
    vocab.emplace_back(e.key(), static_cast<int32_t>(id));
  }
  return vocab;
}

std::vector<std::pair<std::string, std::string>> ParseMerges(const nlohmann::json& model, const std::string& where) {
  std::vector<std::pair<std::string, std::string>> merges;
  auto it = model.find("merges");
  if (it == model.end() || it->is_null()) return merges;
  PC_CHECK(it->is_array(), where, ": model.merges must be an array, got ", it->type_name());
  merges.reserve(it->size());
  for (size_t i = 0; i < it->size(); ++i) {
    const nlohmann::json& m = (*it)[i];
    if (m.is_string()) {
      const std::string& s = m.get_ref<const std::string&>();
      size_t space = s.find(' ');
      PC_CHECK(space != std::string::npos && s.find(' ', space + 1) == std::string::npos, where, ": model.merges[",
               i, "] '", s, "': expected two tokens separated by one space");
      merges.emplace_back(s.substr(0, space), s.substr(space + 1));
    } else {
      PC_CHECK(m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string(), where, ": model.merges[", i,
               "]: expected \"a b\" or [\"a\", \"b\"], got ", m.dump());
      merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    }
  }
  return merges;
}

BpeOptions ParseBpeOptions(const nlohmann::json& model, const std::string& where) {
  std::string w = where + ": model";
  auto dropout = model.find("dropout");
  PC_CHECK(dropout == model.end() || dropout->is_null() || (dropout->is_number() && dropout->get<double>() == 0.0),
           w, ": BPE dropout ", dropout->dump(), " is not supported (it makes encoding random); set it to null");
  BpeOptions o;
  o.unk_token = SpecString(model, "unk_token", "", w);
  o.fuse_unk = SpecBool(model, "fuse_unk", false, w);
  o.byte_fallback = SpecBool(model, "byte_fallback", false, w);
  o.continuing_subword_prefix = SpecString(model, "continuing_subword_prefix", "", w);
  o.end_of_word_suffix = SpecString(model, "end_of_word_suffix", "", w);
  o.ignore_merges = SpecBool(model, "ignore_merges", false, w);
  return o;
}

std::vector<AddedToken> ParseAddedTokens(const nlohmann::json& doc, const std::string& where) {
  std::vector<AddedToken> tokens;
  auto it = doc.find("added_tokens");
  if (it == doc.end() || it->is_null()) return tokens;
  PC_CHECK(it->is_array(), where, ": added_tokens must be an array");
  for (size_t i = 0; i < it->size(); ++i) {
    const nlohmann::json& t = (*it)[i];
    std::string w = Str(where, ": added_tokens[", i, "]");
    AddedToken a;
    a.id = static_cast<int32_t>(JsonInt(t, "id", w));
    PC_CHECK(a.id >= 0, w, ": negative id ", a.id);
    a.content = JsonString(t, "content", w);
    PC_CHECK(!a.content.empty(), w, ": empty content");
    a.special = SpecBool(t, "special", false, w);
    a.single_word = SpecBool(t, "single_word", false, w);
    a.lstrip = SpecBool(t, "lstrip", false, w);
    a.rstrip = SpecBool(t, "rstrip", false, w);
    a.normalized = SpecBool(t, "normalized", !a.special, w);
    tokens.push_back(std::move(a));
  }
  return tokens;
}

// The model type; HF accepts a BPE model without "type" (it is inferred from the fields).
void CheckModelType(const nlohmann::json& model, const std::string& where) {
  PC_CHECK(model.is_object(), where, ": \"model\" must be an object");
  PC_CHECK(model.contains("type") || model.contains("merges"), where, ": model has no \"type\" (expected \"BPE\")");
  std::string type = model.contains("type") ? SpecString(model, "type", "", where + ": model") : "BPE";
  PC_CHECK(type == "BPE", where, ": unsupported model type '", type,
           "' (supported: BPE in tokenizer.json, and sentencepiece tokenizer.model files; not WordPiece, Unigram, "
           "WordLevel)");
}

std::string TokenName(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return "";
}

}  // namespace

BpeTokenizer::BpeTokenizer(nlohmann::json doc, const std::string& where, const FolderConfig* folder)
    : Tokenizer("bpe"), doc_(std::move(doc)) {
  PC_CHECK(doc_.is_object(), where, ": expected a JSON object (a Hugging Face tokenizer.json)");
  auto model_it = doc_.find("model");
  PC_CHECK(model_it != doc_.end(), where, ": missing \"model\"");
  nlohmann::json& model = *model_it;
  CheckModelType(model, where);
  {
    auto vocab = ParseVocab(model, where);
    auto merges = ParseMerges(model, where);
    model_ = std::make_unique<BpeModel>(vocab, merges, ParseBpeOptions(model, where), where + ": model");
  }
  model.erase("vocab");
  model.erase("merges");

  normalizer_ = MakeNormalizer(doc_.value("normalizer", nlohmann::json()), where + ": normalizer");
  pre_tokenizer_ = MakePreTokenizer(doc_.value("pre_tokenizer", nlohmann::json()), where + ": pre_tokenizer");
  decoder_ = MakeDecoder(doc_.value("decoder", nlohmann::json()), where + ": decoder");

  std::vector<AddedToken> added = ParseAddedTokens(doc_, where);
  BuildIdTable(added, where);
  added_ = AddedVocabulary(std::move(added), normalizer_.get());
  SetKind(where);

  SequenceTemplate t = ParsePostProcessor(doc_.value("post_processor", nlohmann::json()),
                                          [this](const std::string& s) { return PieceToId(s); },
                                          where + ": post_processor");
  prefix_ids_ = t.prefix;
  suffix_ids_ = t.suffix;
  ResolveSpecialIds(folder, where);
  CheckSpecialIds(where);
}

// Ids: the model's vocabulary plus the added tokens, dense over [0, vocab_size).
void BpeTokenizer::BuildIdTable(const std::vector<AddedToken>& added, const std::string& where) {
  // Every id in [0, end) must have exactly one token; checked before allocating anything by `end`.
  std::vector<int32_t> all_ids;
  for (int32_t id = 0; id < model_->id_end(); ++id) {
    if (model_->HasId(id)) all_ids.push_back(id);
  }
  for (const AddedToken& a : added) {
    int32_t in_vocab = model_->Find(a.content);
    PC_CHECK(in_vocab < 0 || in_vocab == a.id, where, ": added token '", a.content, "' has id ", a.id,
             " but the vocabulary gives it id ", in_vocab);
    all_ids.push_back(a.id);
  }
  std::sort(all_ids.begin(), all_ids.end());
  all_ids.erase(std::unique(all_ids.begin(), all_ids.end()), all_ids.end());
  for (size_t i = 0; i < all_ids.size(); ++i) {
    PC_CHECK(all_ids[i] == static_cast<int32_t>(i), where, ": id ", i, " has no token (ids must cover 0..",
             all_ids.back(), " without gaps between model.vocab and added_tokens)");
  }
  const auto end = static_cast<int32_t>(all_ids.size());
  id_to_piece_.assign(end, std::string());
  special_.assign(end, false);
  std::vector<bool> has(end, false);
  for (int32_t id = 0; id < model_->id_end(); ++id) {
    if (model_->HasId(id)) id_to_piece_[id] = model_->Piece(id), has[id] = true;
  }
  for (const AddedToken& a : added) {
    PC_CHECK(!has[a.id] || id_to_piece_[a.id] == a.content, where, ": duplicate id ", a.id, " for '",
             id_to_piece_[a.id], "' and added token '", a.content, "'");
    auto [pos, inserted] = added_ids_.emplace(a.content, a.id);
    PC_CHECK(inserted || pos->second == a.id, where, ": added token '", a.content, "' appears with ids ",
             pos->second, " and ", a.id);
    id_to_piece_[a.id] = a.content;
    has[a.id] = true;
    special_[a.id] = special_[a.id] || a.special;
  }
}

void BpeTokenizer::SetKind(const std::string& where) {
  if (pre_tokenizer_ != nullptr && pre_tokenizer_->IsByteLevel()) {
    kind_ = "bpe-bytelevel";
    int missing = 0;  // bytes of valid UTF-8 the vocabulary lacks: without unk they vanish from the input
    for (int b = 0; b < 256; ++b) {
      bool in_utf8 = b < 0xC0 || (b >= 0xC2 && b <= 0xF4);
      missing += in_utf8 && model_->Find(ByteLevelAlphabet::Get().Encode(static_cast<uint8_t>(b))) < 0;
    }
    if (missing > 0 && model_->unk_id() < 0) {
      log::Warn("tokenizer", where, ": ", missing, " byte values of UTF-8 text have no byte-level token "
                "and there is no unk token: input bytes without a token are dropped (as Hugging Face does)");
    }
  } else if (model_->options().byte_fallback || (pre_tokenizer_ != nullptr && pre_tokenizer_->IsMetaspace()) ||
             model_->Find("\xE2\x96\x81") >= 0) {
    kind_ = "bpe-sentencepiece";
  }
}

void BpeTokenizer::AdoptSentencePieceModel(std::string bytes, const SpSpecialIds& ids, const std::string& where) {
  sentencepiece_model_ = std::move(bytes);
  bos_id_ = ids.bos;
  eos_id_ = ids.eos;
  unk_id_ = ids.unk;
  CheckSpecialIds(where);
}

void BpeTokenizer::ResolveSpecialIds(const FolderConfig* folder, const std::string& where) {
  unk_id_ = model_->unk_id();
  if (!prefix_ids_.empty()) bos_id_ = prefix_ids_.front();
  if (!suffix_ids_.empty()) eos_id_ = suffix_ids_.back();
  auto from_name = [&](const nlohmann::json& config, const char* key, const std::string& file) {
    auto it = config.find(key);
    if (it == config.end() || it->is_null()) return -1;
    std::string name = TokenName(*it);
    int32_t id = name.empty() ? -1 : PieceToId(name);
    if (id < 0) log::Warn("tokenizer", file, ": ", key, " ", it->dump(), " is not a token of ", where, "; ignored");
    return id;
  };
  auto from_id = [&](const nlohmann::json& config, const char* key, const std::string& file) {
    auto it = config.find(key);
    if (it == config.end() || it->is_null()) return -1;
    const nlohmann::json& v = it->is_array() && !it->empty() ? (*it)[0] : *it;
    int64_t id = v.is_number_integer() ? v.get<int64_t>() : -1;
    if (id < 0 || id >= vocab_size()) {
      log::Warn("tokenizer", file, ": ", key, " ", it->dump(), " is not an id of ", where, "; ignored");
      return -1;
    }
    return static_cast<int32_t>(id);
  };
  if (folder != nullptr && folder->tokenizer_config.is_object()) {
    std::string file = fs::Join(folder->folder, "tokenizer_config.json");
    if (bos_id_ < 0) bos_id_ = from_name(folder->tokenizer_config, "bos_token", file);
    if (eos_id_ < 0) eos_id_ = from_name(folder->tokenizer_config, "eos_token", file);
    if (unk_id_ < 0) unk_id_ = from_name(folder->tokenizer_config, "unk_token", file);
  }
  if (folder != nullptr && folder->model_config.is_object()) {
    std::string file = fs::Join(folder->folder, "config.json");
    if (bos_id_ < 0) bos_id_ = from_id(folder->model_config, "bos_token_id", file);
    if (eos_id_ < 0) eos_id_ = from_id(folder->model_config, "eos_token_id", file);
  }
  auto by_names = [&](std::initializer_list<const char*> names) {
    for (const char* name : names) {
      auto it = added_ids_.find(name);
      if (it != added_ids_.end() && special_[it->second]) return it->second;
    }
    return -1;
  };
  if (bos_id_ < 0) bos_id_ = by_names({"<s>", "<|begin_of_text|>", "<|startoftext|>", "<bos>", "<|endoftext|>"});
  if (eos_id_ < 0) eos_id_ = by_names({"</s>", "<|end_of_text|>", "<eos>", "<|endoftext|>"});
}

std::vector<int32_t> BpeTokenizer::Encode(const std::string& text) const {
  CheckUtf8(text, "Encode");
  Pieces pieces = added_.SplitAndNormalize(text, normalizer_.get());
  if (pre_tokenizer_ != nullptr) pre_tokenizer_->Apply(&pieces);
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  BpeWordCache cache;
  for (const Piece& p : pieces) {
    if (p.id >= 0) {
      ids.push_back(p.id);
    } else {
      model_->EncodeWord(p.text, &cache, &ids);
    }
  }
  return ids;
}

std::string BpeTokenizer::Decode(const std::vector<int32_t>& ids, bool skip_special) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    PC_CHECK(id >= 0 && id < vocab_size(), "Decode: id ", id, " is out of range (vocab_size ", vocab_size(), ")");
    if (skip_special && special_[id]) continue;
    tokens.push_back(id_to_piece_[id]);
  }
  std::string out;
  if (decoder_ == nullptr) {  // as HF without a decoder: tokens joined with spaces
    for (size_t i = 0; i < tokens.size(); ++i) out += (i ? " " : "") + tokens[i];
    return out;
  }
  decoder_->DecodeChain(&tokens);
  for (const auto& t : tokens) out += t;
  return out;
}

std::string BpeTokenizer::IdToPiece(int32_t id) const {
  PC_CHECK(id >= 0 && id < vocab_size(), "IdToPiece: id ", id, " is out of range (vocab_size ", vocab_size(), ")");
  return id_to_piece_[id];
}

int32_t BpeTokenizer::PieceToId(const std::string& piece) const {
  int32_t id = model_->Find(piece);
  if (id >= 0) return id;
  auto it = added_ids_.find(piece);
  return it == added_ids_.end() ? -1 : it->second;
}

bool BpeTokenizer::IsSpecial(int32_t id) const { return id >= 0 && id < vocab_size() && special_[id]; }

nlohmann::ordered_json BpeTokenizer::ToJson() const {
  auto section = [&](const char* key, nlohmann::json fallback) {
    auto it = doc_.find(key);
    return nlohmann::ordered_json::parse(it == doc_.end() ? fallback.dump() : it->dump());
  };
  nlohmann::ordered_json out;
  out["version"] = section("version", "1.0");
  out["truncation"] = section("truncation", nullptr);
  out["padding"] = section("padding", nullptr);
  out["added_tokens"] = section("added_tokens", nlohmann::json::array());
  out["normalizer"] = section("normalizer", nullptr);
  out["pre_tokenizer"] = section("pre_tokenizer", nullptr);
  out["post_processor"] = section("post_processor", nullptr);
  out["decoder"] = section("decoder", nullptr);
  nlohmann::ordered_json model = section("model", nlohmann::json::object());
  nlohmann::ordered_json vocab = nlohmann::ordered_json::object();
  for (int32_t id = 0; id < model_->id_end(); ++id) {
    if (model_->HasId(id)) vocab[model_->Piece(id)] = id;
  }
  model["vocab"] = std::move(vocab);
  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(model_->merges().size());
  for (const auto& [a, b] : model_->merges()) merges.emplace_back(model_->Piece(a), model_->Piece(b));
  model["merges"] = MergesToJson(merges);
  out["model"] = std::move(model);
  return out;
}

}  // namespace pc::tok
