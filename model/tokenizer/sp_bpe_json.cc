#include "model/tokenizer/sp_bpe_json.h"

#include <algorithm>
#include <unordered_map>

#include "core/error.h"
#include "core/text.h"
#include "model/tokenizer/spec_util.h"

namespace pc::tok {

namespace {
constexpr const char* kMetaspace = "\xE2\x96\x81";

bool IsSpecial(SpPieceType t) { return t == SpPieceType::kUnknown || t == SpPieceType::kControl; }

nlohmann::json StringPattern(const std::string& s) { return {{"String", s}}; }
}  // namespace

std::vector<std::pair<std::string, std::string>> MergesFromScores(const SpBpeVocab& vocab) {
  const auto& pieces = vocab.pieces;
  std::unordered_map<std::string, int32_t> ids;
  ids.reserve(pieces.size() * 2);
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (vocab.merge_special_pieces || !IsSpecial(pieces[i].type)) ids.emplace(pieces[i].piece, static_cast<int32_t>(i));
  }
  struct Candidate {
    float score;
    int32_t merged, left, right;
  };
  std::vector<Candidate> candidates;
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (!vocab.merge_special_pieces && IsSpecial(pieces[i].type)) continue;
    const std::string& p = pieces[i].piece;
    for (size_t cut = 1; cut < p.size(); ++cut) {
      auto l = ids.find(p.substr(0, cut));
      if (l == ids.end()) continue;
      auto r = ids.find(p.substr(cut));
      if (r == ids.end()) continue;
      candidates.push_back({pieces[i].score, static_cast<int32_t>(i), l->second, r->second});
    }
  }
  std::stable_sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    if (a.score != b.score) return a.score > b.score;
    if (a.merged != b.merged) return a.merged < b.merged;
    if (a.left != b.left) return a.left < b.left;
    return a.right < b.right;
  });
  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(candidates.size());
  for (const Candidate& c : candidates) merges.emplace_back(pieces[c.left].piece, pieces[c.right].piece);
  return merges;
}

nlohmann::json SentencePieceBpeJson(const SpBpeVocab& v, const std::string& where) {
  nlohmann::json doc;
  doc["version"] = "1.0";
  doc["truncation"] = nullptr;
  doc["padding"] = nullptr;
  nlohmann::json added = nlohmann::json::array();
  int32_t unk_id = -1;
  for (size_t i = 0; i < v.pieces.size(); ++i) {
    SpPieceType t = v.pieces[i].type;
    if (t == SpPieceType::kUnknown && unk_id < 0) unk_id = static_cast<int32_t>(i);
    if (IsSpecial(t) || t == SpPieceType::kUserDefined) {
      added.push_back({{"id", i}, {"content", v.pieces[i].piece}, {"single_word", false}, {"lstrip", false},
                       {"rstrip", false}, {"normalized", false}, {"special", IsSpecial(t)}});
    }
  }
  doc["added_tokens"] = added;
  nlohmann::json replace_space = {{"type", "Replace"}, {"pattern", StringPattern(" ")}, {"content", kMetaspace}};
  if (v.add_dummy_prefix) {
    doc["normalizer"] = {{"type", "Sequence"},
                         {"normalizers", {{{"type", "Prepend"}, {"prepend", kMetaspace}}, replace_space}}};
  } else {
    doc["normalizer"] = replace_space;
  }
  doc["pre_tokenizer"] = nullptr;
  if (v.bos_id >= 0) {
    PC_ASSERT(v.bos_id < static_cast<int32_t>(v.pieces.size()), "bos id out of range");
    const std::string& bos = v.pieces[v.bos_id].piece;
    auto special = [&](int type_id) {
      return nlohmann::json{{"SpecialToken", {{"id", bos}, {"type_id", type_id}}}};
    };
    auto sequence = [](const char* id, int type_id) {
      return nlohmann::json{{"Sequence", {{"id", id}, {"type_id", type_id}}}};
    };
    doc["post_processor"] = {
        {"type", "TemplateProcessing"},
        {"single", {special(0), sequence("A", 0)}},
        {"pair", {special(0), sequence("A", 0), special(1), sequence("B", 1)}},
        {"special_tokens", {{bos, {{"id", bos}, {"ids", {v.bos_id}}, {"tokens", {bos}}}}}}};
  } else {
    doc["post_processor"] = nullptr;
  }
  nlohmann::json decoders = nlohmann::json::array();
  decoders.push_back({{"type", "Replace"}, {"pattern", StringPattern(kMetaspace)}, {"content", " "}});
  if (v.byte_fallback) decoders.push_back({{"type", "ByteFallback"}});
  decoders.push_back({{"type", "Fuse"}});
  if (v.add_dummy_prefix) decoders.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
  doc["decoder"] = {{"type", "Sequence"}, {"decoders", decoders}};

  nlohmann::json vocab = nlohmann::json::object();
  for (size_t i = 0; i < v.pieces.size(); ++i) {
    const std::string& p = v.pieces[i].piece;
    PC_CHECK(FindInvalidUtf8(p) == std::string::npos, where, ": piece ", i, " is not valid UTF-8");
    PC_CHECK(!vocab.contains(p), where, ": duplicate piece '", p, "' at ids ", vocab.value(p, -1), " and ", i);
    vocab[p] = i;
  }
  doc["model"] = {{"type", "BPE"},
                  {"dropout", nullptr},
                  {"unk_token", unk_id >= 0 ? nlohmann::json(v.pieces[unk_id].piece) : nlohmann::json(nullptr)},
                  {"continuing_subword_prefix", nullptr},
                  {"end_of_word_suffix", nullptr},
                  {"fuse_unk", true},
                  {"byte_fallback", v.byte_fallback},
                  {"ignore_merges", false},
                  {"vocab", std::move(vocab)},
                  {"merges", MergesToJson(MergesFromScores(v))}};
  return doc;
}

std::string SpJsonConversionProblem(const SpModelInfo& info) {
  if (info.model_type != SpModelType::kBpe) {
    return Str("it is a sentencepiece ", SpModelTypeName(info.model_type), " model (only BPE models convert)");
  }
  if (info.has_precompiled_charsmap || !(info.normalizer_name.empty() || info.normalizer_name == "identity")) {
    return Str("its sentencepiece normalizer '", info.normalizer_name,
               "' has no tokenizer.json equivalent here (only 'identity', as Llama's)");
  }
  if (info.remove_extra_whitespaces || !info.escape_whitespaces || info.treat_whitespace_as_suffix) {
    return "only models with remove_extra_whitespaces=false, escape_whitespaces=true and "
           "treat_whitespace_as_suffix=false convert (as Llama's)";
  }
  return "";
}

nlohmann::json SpModelBpeJson(const SpModelInfo& info, const std::string& where) {
  std::string problem = SpJsonConversionProblem(info);
  PC_CHECK(problem.empty(), where, ": cannot write a tokenizer.json: ", problem);
  SpBpeVocab v;
  v.pieces = info.pieces;
  v.bos_id = FindSpSpecialIds(info).bos;
  v.add_dummy_prefix = info.add_dummy_prefix;
  v.byte_fallback = info.byte_fallback;
  v.merge_special_pieces = true;  // as Hugging Face's SentencePieceExtractor
  return SentencePieceBpeJson(v, where);
}

}  // namespace pc::tok
