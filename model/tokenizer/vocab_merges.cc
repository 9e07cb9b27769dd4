#include "model/tokenizer/vocab_merges.h"

#include <map>
#include <set>

#include "core/error.h"
#include "core/fs.h"
#include "core/json_util.h"
#include "core/strings.h"

namespace pc::tok {

bool HasVocabMerges(const std::string& folder) {
  return fs::Exists(fs::Join(folder, "vocab.json")) && fs::Exists(fs::Join(folder, "merges.txt"));
}

namespace {

// "<s>" or {"content": "<s>", ...} (special_tokens_map.json / tokenizer_config.json forms); "" else.
std::string TokenContent(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return "";
}

nlohmann::json AddedToken(int64_t id, const std::string& content, bool special, const nlohmann::json& flags) {
  auto flag = [&](const char* k, bool def) {
    return flags.is_object() && flags.contains(k) && flags[k].is_boolean() ? flags[k].get<bool>() : def;
  };
  return {{"id", id},
          {"content", content},
          {"single_word", flag("single_word", false)},
          {"lstrip", flag("lstrip", false)},
          {"rstrip", flag("rstrip", false)},
          {"normalized", flag("normalized", !special)},
          {"special", flag("special", special)}};
}

}  // namespace

nlohmann::json VocabMergesTokenizerJson(const std::string& folder) {
  const std::string vocab_path = fs::Join(folder, "vocab.json"), merges_path = fs::Join(folder, "merges.txt");
  nlohmann::json vocab = LoadJsonFile(vocab_path);
  PC_CHECK(vocab.is_object(), vocab_path, ": must be a JSON object {token: id}, got ", vocab.type_name());

  // merges.txt: an optional "#version" first line, then "left right" per line, in rank order.
  nlohmann::json merges = nlohmann::json::array();
  std::string text = fs::ReadFile(merges_path);
  size_t pos = 0;
  for (int64_t line_no = 1; pos < text.size(); ++line_no) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (line_no == 1 && StartsWith(line, "#version"))) continue;
    size_t space = line.find(' ');
    PC_CHECK(space != std::string::npos && space > 0 && space + 1 < line.size() &&
                 line.find(' ', space + 1) == std::string::npos,
             merges_path, " line ", line_no, ": expected two pieces separated by one space, got '", line, "'");
    merges.push_back(line);
  }

  const std::string tc_path = fs::Join(folder, "tokenizer_config.json");
  const std::string stm_path = fs::Join(folder, "special_tokens_map.json");
  const std::string at_path = fs::Join(folder, "added_tokens.json");
  nlohmann::json tc = fs::Exists(tc_path) ? LoadJsonFile(tc_path) : nlohmann::json::object();
  nlohmann::json stm = fs::Exists(stm_path) ? LoadJsonFile(stm_path) : nlohmann::json::object();
  PC_CHECK(tc.is_object(), tc_path, ": must be a JSON object");
  PC_CHECK(stm.is_object(), stm_path, ": must be a JSON object");
  auto flag = [&](const char* k) { return tc.contains(k) && tc[k].is_boolean() && tc[k].get<bool>(); };

  // Added tokens by id: tokenizer_config.json's added_tokens_decoder, added_tokens.json, then the
  // special tokens (bos/eos/unk/pad) as the slow tokenizer registers them.
  std::map<int64_t, nlohmann::json> added;
  if (tc.contains("added_tokens_decoder") && tc["added_tokens_decoder"].is_object()) {
    for (auto it = tc["added_tokens_decoder"].begin(); it != tc["added_tokens_decoder"].end(); ++it) {
      const int64_t id = ParseInt(it.key(), tc_path + ": added_tokens_decoder key");
      PC_CHECK(id >= 0, tc_path, ": added_tokens_decoder key '", it.key(), "' is not a token id");
      std::string content = TokenContent(it.value());
      PC_CHECK(!content.empty(), tc_path, ": added_tokens_decoder['", it.key(), "'] has no content");
      added[id] = AddedToken(id, content, true, it.value());
    }
  }
  if (fs::Exists(at_path)) {
    nlohmann::json at = LoadJsonFile(at_path);
    PC_CHECK(at.is_object(), at_path, ": must be a JSON object {token: id}");
    for (auto it = at.begin(); it != at.end(); ++it) {
      PC_CHECK(it.value().is_number_integer(), at_path, ": '", it.key(), "' must map to an integer id");
      int64_t id = it.value().get<int64_t>();
      if (!added.count(id)) added[id] = AddedToken(id, it.key(), false, nlohmann::json());
    }
  }
  std::set<std::string> have;
  for (const auto& [id, t] : added) have.insert(t["content"].get<std::string>());
  std::string bos;
  for (const char* key : {"bos_token", "eos_token", "unk_token", "pad_token"}) {
    std::string content = TokenContent(stm.contains(key) ? stm[key] : (tc.contains(key) ? tc[key] : nullptr));
    if (std::string(key) == "bos_token") bos = content;
    if (content.empty() || have.count(content)) continue;
    PC_CHECK(vocab.contains(content), folder, ": ", key, " '", content, "' is not in ", vocab_path);
    int64_t id = vocab[content].get<int64_t>();
    added[id] = AddedToken(id, content, true, stm.contains(key) ? stm[key] : nlohmann::json());
    have.insert(content);
  }
  nlohmann::json added_tokens = nlohmann::json::array();
  for (const auto& [id, t] : added) added_tokens.push_back(t);

  const bool prefix_space = flag("add_prefix_space");
  nlohmann::json post = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false}, {"use_regex", true}};
  if (flag("add_bos_token")) {
    PC_CHECK(!bos.empty() && vocab.contains(bos), tc_path, ": add_bos_token is true but the bos token '", bos,
             "' is not in ", vocab_path);
    const int64_t bos_id = vocab[bos].get<int64_t>();
    nlohmann::json first = {{"SpecialToken", {{"id", bos}, {"type_id", 0}}}};
    post = {{"type", "TemplateProcessing"},
            {"single", {first, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
            {"pair", {first, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}, first,
                      {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}}},
            {"special_tokens", {{bos, {{"id", bos}, {"ids", {bos_id}}, {"tokens", {bos}}}}}}};
  }
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", added_tokens},
          {"normalizer", nullptr},
          {"pre_tokenizer",
           {{"type", "ByteLevel"}, {"add_prefix_space", prefix_space}, {"trim_offsets", true}, {"use_regex", true}}},
          {"post_processor", post},
          {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
          {"model",
           {{"type", "BPE"},
            {"dropout", nullptr},
            {"unk_token", nullptr},
            {"continuing_subword_prefix", ""},
            {"end_of_word_suffix", ""},
            {"fuse_unk", false},
            {"byte_fallback", false},
            {"vocab", vocab},
            {"merges", merges}}}};
}

}  // namespace pc::tok
