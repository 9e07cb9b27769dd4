#include "model/tokenizer/tokenizer.h"

#include <tuple>

#include "core/error.h"
#include "core/fs.h"
#include "core/json_util.h"
#include "core/log.h"
#include "core/strings.h"
#include "model/tokenizer/bpe_tokenizer.h"
#include "model/tokenizer/sp_bpe_json.h"
#include "model/tokenizer/sp_model_proto.h"
#include "model/tokenizer/vocab_merges.h"

namespace pc {

Tokenizer::~Tokenizer() = default;

std::vector<int32_t> Tokenizer::EncodeWithSpecial(const std::string& text) const {
  std::vector<int32_t> ids = prefix_ids_;
  std::vector<int32_t> body = Encode(text);
  ids.insert(ids.end(), body.begin(), body.end());
  return ids;
}

void Tokenizer::CheckSpecialIds(const std::string& where) const {
  const int32_t n = vocab_size();
  auto check = [&](int32_t id, const char* what) {
    PC_CHECK(id >= -1 && id < n, where, ": ", what, " id ", id, " is out of range (vocab_size ", n, ")");
  };
  check(bos_id_, "bos");
  check(eos_id_, "eos");
  check(unk_id_, "unk");
  for (const auto* ids : {&prefix_ids_, &suffix_ids_}) {
    for (int32_t id : *ids) {
      PC_CHECK(id >= 0 && id < n, where, ": post-processor id ", id, " is out of range (vocab_size ", n, ")");
    }
  }
}

namespace {

// The model type named in a tokenizer.json ("" when absent).
std::string JsonModelType(const nlohmann::json& doc) {
  if (!doc.is_object() || !doc.contains("model") || !doc["model"].is_object()) return "";
  const nlohmann::json& m = doc["model"];
  return m.contains("type") && m["type"].is_string() ? m["type"].get<std::string>() : "";
}

std::unique_ptr<Tokenizer> LoadJson(const std::string& json_path, const std::string& model_fallback) {
  nlohmann::json doc = LoadJsonFile(json_path);
  std::string type = JsonModelType(doc);
  if (!model_fallback.empty() && !type.empty() && type != "BPE") {
    return TokenizerFromSentencePieceBpe(model_fallback);  // errors when that model does not convert either
  }
  tok::FolderConfig folder = tok::ReadFolderConfig(fs::Parent(json_path));
  return std::make_unique<tok::BpeTokenizer>(std::move(doc), json_path, &folder);
}

}  // namespace

std::unique_ptr<Tokenizer> LoadTokenizer(const std::string& path) {
  PC_CHECK(!path.empty(), "tokenizer path is empty");
  PC_CHECK(fs::Exists(path), "tokenizer '", path, "' does not exist");
  if (fs::IsDirectory(path)) {
    std::string json = fs::Join(path, "tokenizer.json"), model = fs::Join(path, "tokenizer.model");
    bool has_model = fs::Exists(model);
    if (fs::Exists(json)) return LoadJson(json, has_model ? model : "");
    if (has_model) return TokenizerFromSentencePieceBpe(model);
    if (tok::HasVocabMerges(path)) {
      tok::FolderConfig folder = tok::ReadFolderConfig(path);
      return std::make_unique<tok::BpeTokenizer>(tok::VocabMergesTokenizerJson(path),
                                                 fs::Join(path, "vocab.json") + " + merges.txt", &folder);
    }
    PC_THROW("tokenizer folder '", path, "' has neither tokenizer.json, tokenizer.model nor vocab.json + merges.txt");
  }
  if (EndsWith(path, ".json")) return LoadJson(path, "");
  if (EndsWith(path, ".model")) return TokenizerFromSentencePieceBpe(path);
  // Another name: JSON when it starts like JSON, else a sentencepiece model.
  std::string head = fs::ReadFile(path).substr(0, 64);
  size_t first = head.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && head[first] == '{') return LoadJson(path, "");
  return TokenizerFromSentencePieceBpe(path);
}

std::unique_ptr<Tokenizer> TokenizerFromSentencePieceBpe(const std::string& model_path) {
  PC_CHECK(fs::Exists(model_path), "sentencepiece model '", model_path, "' does not exist");
  std::string bytes = fs::ReadFile(model_path);
  tok::SpModelInfo info = tok::ParseSpModelProto(bytes, model_path);
  std::string problem = tok::SpJsonConversionProblem(info);
  PC_CHECK(problem.empty(), model_path, ": unsupported sentencepiece model: ", problem,
           ". perpcomp reads tokenizer.model without libsentencepiece, as the Llama-style tokenizer.json form "
           "that only sentencepiece BPE models with Llama's normalizer settings have, because libsentencepiece "
           "cannot be loaded beside LibTorch on this platform (Debian 12's build crashes at start against "
           "LibTorch's libprotobuf); provide a tokenizer.json with a BPE model instead");
  tok::SpSpecialIds ids = tok::FindSpSpecialIds(info);
  for (const auto& [what, found, trained] :
       {std::tuple<const char*, int32_t, int32_t>{"unk", ids.unk, info.trainer_unk_id},
        {"bos", ids.bos, info.trainer_bos_id},
        {"eos", ids.eos, info.trainer_eos_id}}) {
    if (found != trained) {
      log::Warn("tokenizer", model_path, ": trainer_spec.", what, "_id is ", trained, " but the ", what,
                " piece is id ", found, "; using ", found, " as libsentencepiece does");
    }
  }
  auto tokenizer = std::make_unique<tok::BpeTokenizer>(tok::SpModelBpeJson(info, model_path), model_path);
  tokenizer->AdoptSentencePieceModel(std::move(bytes), ids, model_path);
  return tokenizer;
}

namespace {

// A "sentencepiece-model" tokenizer (pc_tokenizer_spm) converts through its model's bytes.
bool IsUnconvertedModel(const Tokenizer& tokenizer) {
  return dynamic_cast<const tok::BpeTokenizer*>(&tokenizer) == nullptr && !tokenizer.sentencepiece_model().empty();
}

nlohmann::ordered_json TokenizerJson(const Tokenizer& tokenizer) {
  if (const auto* bpe = dynamic_cast<const tok::BpeTokenizer*>(&tokenizer)) return bpe->ToJson();
  if (IsUnconvertedModel(tokenizer)) {
    const std::string where = "tokenizer.model";
    tok::SpModelInfo info = tok::ParseSpModelProto(tokenizer.sentencepiece_model(), where);
    return tok::BpeTokenizer(tok::SpModelBpeJson(info, where), where + " as tokenizer.json").ToJson();
  }
  PC_THROW("cannot write a tokenizer.json for a '", tokenizer.kind(), "' tokenizer");
}

nlohmann::json TokenValue(const Tokenizer& tokenizer, int32_t id) {
  return id >= 0 ? nlohmann::json(tokenizer.IdToPiece(id)) : nlohmann::json(nullptr);
}

}  // namespace

void SaveTokenizerJson(const Tokenizer& tokenizer, const std::string& path) {
  fs::WriteFileAtomic(path, TokenizerJson(tokenizer).dump(2) + "\n");
}

void SaveTokenizerFiles(const Tokenizer& tokenizer, const std::string& dir) {
  fs::MakeDirs(dir);
  const std::string& model = tokenizer.sentencepiece_model();
  bool has_json = !IsUnconvertedModel(tokenizer) ||
                  tok::SpJsonConversionProblem(tok::ParseSpModelProto(model, "tokenizer.model")).empty();
  if (!model.empty()) fs::WriteFileAtomic(fs::Join(dir, "tokenizer.model"), model);
  if (has_json) SaveTokenizerJson(tokenizer, fs::Join(dir, "tokenizer.json"));

  nlohmann::ordered_json specials;
  for (const auto& [key, id] : {std::pair<const char*, int32_t>{"bos_token", tokenizer.bos_id()},
                                {"eos_token", tokenizer.eos_id()},
                                {"unk_token", tokenizer.unk_id()}}) {
    if (id >= 0) specials[key] = tokenizer.IdToPiece(id);
  }
  fs::WriteFileAtomic(fs::Join(dir, "special_tokens_map.json"), specials.dump(2) + "\n");

  nlohmann::ordered_json config;
  config["tokenizer_class"] = has_json ? "PreTrainedTokenizerFast" : "LlamaTokenizer";
  config["bos_token"] = TokenValue(tokenizer, tokenizer.bos_id());
  config["eos_token"] = TokenValue(tokenizer, tokenizer.eos_id());
  config["unk_token"] = TokenValue(tokenizer, tokenizer.unk_id());
  bool adds_bos = !tokenizer.prefix_ids().empty() && tokenizer.prefix_ids().front() == tokenizer.bos_id();
  config["add_bos_token"] = adds_bos;
  config["add_eos_token"] = false;
  config["clean_up_tokenization_spaces"] = false;
  fs::WriteFileAtomic(fs::Join(dir, "tokenizer_config.json"), config.dump(2) + "\n");
}

}  // namespace pc
