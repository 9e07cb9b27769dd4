#include "model/gguf_tokenizer.h"

#include <algorithm>
#include <unordered_map>

#include <cctype>

#include "core/error.h"
#include "core/fs.h"
#include "core/json_util.h"
#include "model/gguf_writer.h"
#include "core/text.h"

namespace pc {
namespace {

constexpr const char* kMetaspace = "\xE2\x96\x81";
constexpr int64_t kControl = 3;  // llama.cpp's token type of control (special) tokens
// Qwen2's pre-tokenizer split (transformers' Qwen2Converter).
constexpr const char* kQwen2Split =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

nlohmann::json StringPattern(const std::string& s) { return {{"String", s}}; }

nlohmann::json ByteLevel(bool add_prefix_space, bool trim_offsets, bool use_regex) {
  return {{"type", "ByteLevel"}, {"add_prefix_space", add_prefix_space}, {"trim_offsets", trim_offsets},
          {"use_regex", use_regex}};
}

struct Vocab {
  std::vector<std::string> tokens;
  std::vector<float> scores;          // empty when the file has none
  std::vector<int64_t> types;         // empty when the file has none
  std::vector<std::pair<std::string, std::string>> merges;
  bool has_merges = false;
};

Vocab ReadVocab(const GgufFile& f) {
  const std::string& where = f.path();
  Vocab v;
  const GgufValue* tokens = f.Find("tokenizer.ggml.tokens");
  PC_CHECK(tokens != nullptr, where, ": metadata 'tokenizer.ggml.tokens' is missing (the file has no tokenizer)");
  PC_CHECK(tokens->IsArrayOf(GgufType::kString), where, ": metadata 'tokenizer.ggml.tokens' is ", tokens->Describe(),
           ", expected an array of strings");
  PC_CHECK(!tokens->strings.empty(), where, ": tokenizer.ggml.tokens is empty");
  v.tokens = tokens->strings;
  std::unordered_map<std::string, size_t> seen;
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    const std::string& t = v.tokens[i];
    PC_CHECK(FindInvalidUtf8(t) == std::string::npos, where, ": token ", i, " is not valid UTF-8");
    auto [it, fresh] = seen.emplace(t, i);
    PC_CHECK(fresh, where, ": tokens ", it->second, " and ", i, " are both '", t,
             "' (a tokenizer.json vocabulary needs distinct tokens)");
  }
  const size_t n = v.tokens.size();
  if (const GgufValue* s = f.Find("tokenizer.ggml.scores")) {
    PC_CHECK(s->IsArrayOf(GgufType::kF32) && s->count == n, where, ": metadata 'tokenizer.ggml.scores' is ",
             s->Describe(), ", expected an array of ", n, " float32 (one per token)");
    for (uint64_t k = 0; k < n; ++k) v.scores.push_back(static_cast<float>(s->FloatAt(k)));
  }
  if (const GgufValue* t = f.Find("tokenizer.ggml.token_type")) {
    PC_CHECK(t->type == GgufType::kArray && t->count == n && !t->raw.empty() && t->elem != GgufType::kF32 &&
                 t->elem != GgufType::kF64,
             where, ": metadata 'tokenizer.ggml.token_type' is ", t->Describe(), ", expected an array of ", n,
             " integers (one per token)");
    for (uint64_t k = 0; k < n; ++k) v.types.push_back(t->IntAt(k, where + ": tokenizer.ggml.token_type"));
  }
  if (const GgufValue* m = f.Find("tokenizer.ggml.merges")) {
    PC_CHECK(m->IsArrayOf(GgufType::kString), where, ": metadata 'tokenizer.ggml.merges' is ", m->Describe(),
             ", expected an array of strings");
    v.has_merges = true;
    v.merges.reserve(m->strings.size());
    for (size_t k = 0; k < m->strings.size(); ++k) {
      const std::string& s = m->strings[k];
      const size_t space = s.find(' ');
      PC_CHECK(space != std::string::npos && space > 0 && space + 1 < s.size() &&
                   s.find(' ', space + 1) == std::string::npos,
               where, ": merge ", k, " '", s, "' is not two tokens separated by one space");
      v.merges.emplace_back(s.substr(0, space), s.substr(space + 1));
    }
  }
  return v;
}

// transformers' merges of a sentencepiece vocabulary without merges: for every token, every split
// into two tokens, the splits ordered by (left score, right score) descending; then all of them
// ordered by the whole token's score, descending (both sorts stable).
std::vector<std::pair<std::string, std::string>> MergesFromScores(const Vocab& v, const std::string& where) {
  PC_CHECK(v.scores.size() == v.tokens.size(), where,
           ": the tokenizer has neither tokenizer.ggml.merges nor tokenizer.ggml.scores");
  std::unordered_map<std::string, float> score;
  for (size_t i = 0; i < v.tokens.size(); ++i) score.emplace(v.tokens[i], v.scores[i]);
  struct Merge {
    float score;
    std::string left, right;
  };
  std::vector<Merge> all;
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    const std::string& t = v.tokens[i];
    std::vector<Merge> local;
    for (size_t cut = 1; cut < t.size(); ++cut) {
      if ((static_cast<unsigned char>(t[cut]) & 0xC0) == 0x80) continue;  // cuts between characters only
      auto l = score.find(t.substr(0, cut));
      if (l == score.end()) continue;
      auto r = score.find(t.substr(cut));
      if (r == score.end()) continue;
      local.push_back({v.scores[i], l->first, r->first});
    }
    std::stable_sort(local.begin(), local.end(), [&](const Merge& a, const Merge& b) {
      const float al = score[a.left], bl = score[b.left];
      if (al != bl) return al > bl;
      return score[a.right] > score[b.right];
    });
    all.insert(all.end(), local.begin(), local.end());
  }
  std::stable_sort(all.begin(), all.end(), [](const Merge& a, const Merge& b) { return a.score > b.score; });
  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(all.size());
  for (auto& m : all) merges.emplace_back(std::move(m.left), std::move(m.right));
  return merges;
}

nlohmann::json AddedToken(int64_t id, const std::string& content) {
  return {{"id", id},           {"content", content}, {"single_word", false}, {"lstrip", false},
          {"rstrip", false},    {"normalized", false}, {"special", true}};
}

int64_t TokenId(const GgufFile& f, const std::string& key, int64_t n) {
  int64_t id = f.IntOr(key, -1);
  PC_CHECK(id >= -1 && id < n, f.path(), ": metadata '", key, "' = ", id, " is not a token id (vocabulary of ", n,
           ")");
  return id;
}

}  // namespace

GgufTokenizerFiles GgufTokenizerJson(const GgufFile& f) {
  const std::string& where = f.path();
  const std::string arch = f.String("general.architecture");
  const std::string model = f.StringOr("tokenizer.ggml.model", "llama");
  Vocab v = ReadVocab(f);
  const int64_t n = static_cast<int64_t>(v.tokens.size());
  GgufTokenizerFiles out;
  out.vocab_size = n;
  out.bos_id = TokenId(f, "tokenizer.ggml.bos_token_id", n);
  out.eos_id = TokenId(f, "tokenizer.ggml.eos_token_id", n);
  const int64_t unk_id = TokenId(f, "tokenizer.ggml.unknown_token_id", n);
  const int64_t pad_id = TokenId(f, "tokenizer.ggml.padding_token_id", n);
  const GgufValue* prefix_key = f.Find("tokenizer.ggml.add_space_prefix");
  const bool add_prefix_space = f.BoolOr("tokenizer.ggml.add_space_prefix", true);

  const bool llama = arch == "llama" || arch == "deci";
  const bool qwen = arch == "qwen2" || arch == "qwen3";
  const bool byte_level_gpt = arch == "gpt2" || arch == "gptneox";
  PC_CHECK(llama || qwen || byte_level_gpt, where, ": no tokenizer conversion for architecture '", arch,
           "' (supported: llama, qwen2, qwen3, gpt2, gptneox)");
  PC_CHECK(model == "llama" || model == "gpt2", where, ": tokenizer.ggml.model '", model,
           "' is not supported (supported: llama = sentencepiece-style BPE, gpt2 = byte-level BPE)");
  PC_CHECK(llama || model == "gpt2", where, ": architecture '", arch, "' with tokenizer.ggml.model '", model,
           "' is not supported (expected a byte-level 'gpt2' vocabulary)");
  if (!v.has_merges) {
    PC_CHECK(model == "llama", where, ": a byte-level ('gpt2') tokenizer needs tokenizer.ggml.merges");
    v.merges = MergesFromScores(v, where);
  }

  nlohmann::json vocab = nlohmann::json::object();
  for (int64_t i = 0; i < n; ++i) vocab[v.tokens[i]] = i;
  nlohmann::json merges = nlohmann::json::array();
  for (const auto& [a, b] : v.merges) {
    PC_CHECK(vocab.contains(a) && vocab.contains(b) && vocab.contains(a + b), where, ": merge '", a, " ", b,
             "' uses or makes a token that is not in the vocabulary");
    merges.push_back({a, b});
  }
  nlohmann::json added = nlohmann::json::array();
  if (qwen) {
    for (const char* t : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}) {
      PC_CHECK(vocab.contains(t), where, ": a qwen2 vocabulary must hold '", t, "'");
      added.push_back(AddedToken(vocab[t].get<int64_t>(), t));
    }
  } else if (arch == "gpt2") {
    // transformers' GPT-2 conversion adds no tokens itself; its tokenizer class then adds the
    // bos/eos/unk/pad tokens named by the metadata as special tokens.
    for (int64_t id : {out.bos_id, out.eos_id, unk_id, pad_id}) {
      bool dup = false;
      for (const auto& a : added) dup = dup || a["id"] == id;
      if (id >= 0 && !dup) added.push_back(AddedToken(id, v.tokens[id]));
    }
  } else {
    if (!v.types.empty()) {
      for (int64_t i = 0; i < n; ++i) {
        if (v.types[i] == kControl) added.push_back(AddedToken(i, v.tokens[i]));
      }
    } else if (llama) {
      // No token types: unk, bos and eos are the special tokens (transformers' fallback).
      for (int64_t id : {unk_id, out.bos_id, out.eos_id}) {
        if (id >= 0) added.push_back(AddedToken(id, v.tokens[id]));
      }
    }
  }

  nlohmann::json doc;
  doc["version"] = "1.0";
  doc["truncation"] = nullptr;
  doc["padding"] = nullptr;
  doc["added_tokens"] = added;
  nlohmann::json bpe = {{"type", "BPE"},          {"dropout", nullptr},
                        {"unk_token", nullptr},   {"continuing_subword_prefix", nullptr},
                        {"end_of_word_suffix", nullptr}, {"fuse_unk", false},
                        {"byte_fallback", false}, {"ignore_merges", false}};
  if (llama) {
    bpe["unk_token"] = unk_id >= 0 ? nlohmann::json(v.tokens[unk_id]) : nlohmann::json(nullptr);
    bpe["fuse_unk"] = true;
    bpe["byte_fallback"] = true;
  } else {
    bpe["continuing_subword_prefix"] = "";
    bpe["end_of_word_suffix"] = "";
  }
  bpe["vocab"] = std::move(vocab);
  bpe["merges"] = std::move(merges);

  nlohmann::json normalizer = nullptr, pre = nullptr, post = nullptr, decoder;
  if (llama && model == "llama") {
    nlohmann::json seq = nlohmann::json::array();
    if (add_prefix_space) seq.push_back({{"type", "Prepend"}, {"prepend", kMetaspace}});
    seq.push_back({{"type", "Replace"}, {"pattern", StringPattern(" ")}, {"content", kMetaspace}});
    normalizer = {{"type", "Sequence"}, {"normalizers", seq}};
  } else if (llama) {
    normalizer = {{"type", "Sequence"}, {"normalizers", nlohmann::json::array()}};
    pre = ByteLevel(false, false, true);
  } else if (qwen) {
    normalizer = {{"type", "NFC"}};
    pre = {{"type", "Sequence"},
           {"pretokenizers",
            {{{"type", "Split"}, {"pattern", {{"Regex", kQwen2Split}}}, {"behavior", "Isolated"}, {"invert", false}},
             ByteLevel(prefix_key != nullptr && add_prefix_space, true, false)}}};
  } else {
    pre = ByteLevel(prefix_key != nullptr && add_prefix_space, true, true);
  }
  if (llama) {
    nlohmann::json seq = {{{"type", "ByteFallback"}},
                          {{"type", "Fuse"}},
                          {{"type", "Replace"}, {"pattern", StringPattern(kMetaspace)}, {"content", " "}}};
    if (model != "llama") seq.push_back(ByteLevel(false, false, true));
    if (add_prefix_space) seq.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
    decoder = {{"type", "Sequence"}, {"decoders", seq}};
    if (out.bos_id >= 0 && f.BoolOr("tokenizer.ggml.add_bos_token", model == "llama")) {
      const std::string& bos = v.tokens[out.bos_id];
      post = {{"type", "TemplateProcessing"},
              {"single", {{{"SpecialToken", {{"id", bos}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
              {"pair",
               {{{"SpecialToken", {{"id", bos}, {"type_id", 0}}}},
                {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                {{"SpecialToken", {{"id", bos}, {"type_id", 1}}}},
                {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}}},
              {"special_tokens", {{bos, {{"id", bos}, {"ids", {out.bos_id}}, {"tokens", {bos}}}}}}};
    }
  } else {
    decoder = ByteLevel(true, true, true);
    post = ByteLevel(true, false, true);
  }
  doc["normalizer"] = normalizer;
  doc["pre_tokenizer"] = pre;
  doc["post_processor"] = post;
  doc["decoder"] = decoder;
  doc["model"] = std::move(bpe);
  out.tokenizer = std::move(doc);

  nlohmann::json& tc = out.tokenizer_config;
  tc["tokenizer_class"] = "PreTrainedTokenizerFast";
  auto token_or_null = [&](int64_t id) { return id >= 0 ? nlohmann::json(v.tokens[id]) : nlohmann::json(nullptr); };
  tc["bos_token"] = token_or_null(out.bos_id);
  tc["eos_token"] = token_or_null(out.eos_id);
  tc["unk_token"] = token_or_null(unk_id);
  tc["pad_token"] = token_or_null(pad_id);
  tc["add_bos_token"] = post.is_object() && post["type"] == "TemplateProcessing";
  tc["clean_up_tokenization_spaces"] = false;
  if (const GgufValue* t = f.Find("tokenizer.chat_template"); t != nullptr && t->type == GgufType::kString) {
    tc["chat_template"] = t->str;
  }
  tc["perpcomp_gguf_tokenizer"] = {{"model", model}, {"pre", f.StringOr("tokenizer.ggml.pre", "")}};
  return out;
}

}  // namespace pc

namespace pc {
namespace {

// A tokenizer_config.json token: "<s>" or {"content": "<s>", ...}; "" when absent or null.
std::string ConfigToken(const nlohmann::json& tc, const char* key) {
  if (!tc.contains(key)) return "";
  const nlohmann::json& v = tc[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return "";
}

bool HasByteLevel(const nlohmann::json& part) {
  if (!part.is_object()) return false;
  if (part.value("type", "") == "ByteLevel") return true;
  for (const char* list : {"pretokenizers", "decoders"}) {
    if (part.contains(list) && part[list].is_array()) {
      for (const auto& p : part[list]) {
        if (HasByteLevel(p)) return true;
      }
    }
  }
  return false;
}

bool HasPrependMetaspace(const nlohmann::json& n) {
  if (!n.is_object()) return false;
  if (n.value("type", "") == "Prepend") return n.value("prepend", "") == kMetaspace;
  if (n.contains("normalizers") && n["normalizers"].is_array()) {
    for (const auto& p : n["normalizers"]) {
      if (HasPrependMetaspace(p)) return true;
    }
  }
  return false;
}

bool IsByteToken(const std::string& t) {
  return t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>' && std::isxdigit(static_cast<unsigned char>(t[3])) &&
         std::isxdigit(static_cast<unsigned char>(t[4]));
}

}  // namespace

std::vector<std::pair<std::string, GgufValue>> GgufTokenizerMetadata(const std::string& dir,
                                                                    const std::string& gguf_arch, int64_t vocab_size,
                                                                    int64_t config_bos, int64_t config_eos) {
  const std::string path = dir + "/tokenizer.json";
  PC_CHECK(fs::Exists(path), "'", dir, "' has no tokenizer.json: the GGUF writer converts a Hugging Face ",
           "tokenizer.json (BPE) into tokenizer.ggml.* (a folder with only tokenizer.model is not supported)");
  const nlohmann::json doc = LoadJsonFile(path);
  PC_CHECK(doc.contains("model") && doc["model"].is_object() && doc["model"].value("type", "") == "BPE", "'", path,
           "': model.type '", doc.contains("model") ? doc["model"].value("type", "") : "",
           "' cannot be written as a GGUF tokenizer (only BPE models: llama.cpp's 'llama' and 'gpt2' vocabularies)");
  const nlohmann::json& m = doc["model"];
  PC_CHECK(m.contains("vocab") && m["vocab"].is_object(), "'", path, "': model.vocab is not an object");
  const bool byte_level = HasByteLevel(doc.value("pre_tokenizer", nlohmann::json())) ||
                          HasByteLevel(doc.value("decoder", nlohmann::json()));
  const bool byte_fallback = m.value("byte_fallback", false);
  PC_CHECK(byte_level || byte_fallback, "'", path, "': a BPE model with neither a ByteLevel pre-tokenizer nor ",
           "byte_fallback has no llama.cpp vocabulary type (llama.cpp: 'gpt2' byte-level or 'llama' sentencepiece)");
  const std::string model = byte_level ? "gpt2" : "llama";

  std::vector<std::string> tokens(static_cast<size_t>(vocab_size));
  std::vector<char> have(tokens.size(), 0);
  auto place = [&](const std::string& t, int64_t id) {
    PC_CHECK(id >= 0 && id < vocab_size, "'", path, "': token '", t, "' has id ", id,
             ", beyond the model's vocabulary of ", vocab_size);
    PC_CHECK(!have[id] || tokens[id] == t, "'", path, "': id ", id, " is both '", tokens[id], "' and '", t, "'");
    tokens[id] = t;
    have[id] = 1;
  };
  for (const auto& [t, id] : m["vocab"].items()) place(t, id.get<int64_t>());
  std::vector<int32_t> types(tokens.size(), 1);
  if (doc.contains("added_tokens") && doc["added_tokens"].is_array()) {
    for (const auto& a : doc["added_tokens"]) {
      const int64_t id = a.value("id", int64_t{-1});
      place(a.value("content", ""), id);
      if (a.value("special", false)) types[id] = static_cast<int32_t>(kControl);
    }
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (!have[i]) {
      tokens[i] = "[PAD" + std::to_string(i) + "]";
      types[i] = 5;
    } else if (model == "llama" && types[i] == 1 && IsByteToken(tokens[i])) {
      types[i] = 6;
    }
  }
  std::vector<std::string> merges;
  if (m.contains("merges") && m["merges"].is_array()) {
    for (const auto& mg : m["merges"]) {
      if (mg.is_string()) {
        merges.push_back(mg.get<std::string>());
      } else {
        PC_CHECK(mg.is_array() && mg.size() == 2 && mg[0].is_string() && mg[1].is_string(), "'", path,
                 "': merge ", merges.size(), " is neither \"a b\" nor [a, b]");
        merges.push_back(mg[0].get<std::string>() + " " + mg[1].get<std::string>());
      }
    }
  }

  nlohmann::json tc = nlohmann::json::object();
  if (fs::Exists(dir + "/tokenizer_config.json")) tc = LoadJsonFile(dir + "/tokenizer_config.json");
  std::unordered_map<std::string, int64_t> id_of;
  for (size_t i = 0; i < tokens.size(); ++i) id_of.emplace(tokens[i], static_cast<int64_t>(i));
  auto id_for = [&](const char* key, int64_t fallback) -> int64_t {
    const std::string t = ConfigToken(tc, key);
    if (t.empty()) return fallback;
    auto it = id_of.find(t);
    PC_CHECK(it != id_of.end(), "'", dir, "/tokenizer_config.json': ", key, " '", t, "' is not in the vocabulary");
    return it->second;
  };
  const int64_t bos = id_for("bos_token", config_bos), eos = id_for("eos_token", config_eos);
  const int64_t unk = id_for("unk_token", -1), pad = id_for("pad_token", -1);
  if (unk >= 0) types[unk] = 2;  // llama.cpp: unk is UNKNOWN, not CONTROL
  bool add_bos = false;
  if (tc.contains("add_bos_token") && tc["add_bos_token"].is_boolean()) {
    add_bos = tc["add_bos_token"].get<bool>();
  } else if (doc.contains("post_processor") && doc["post_processor"].is_object()) {
    const nlohmann::json& p = doc["post_processor"];
    add_bos = p.value("type", "") == "TemplateProcessing" && p.contains("single") && p["single"].is_array() &&
              !p["single"].empty() && p["single"][0].contains("SpecialToken");
  }

  std::vector<std::pair<std::string, GgufValue>> out;
  out.emplace_back("tokenizer.ggml.model", GgufString(model));
  std::string pre = "default";
  if (tc.contains("perpcomp_gguf_tokenizer") && tc["perpcomp_gguf_tokenizer"].is_object() &&
      tc["perpcomp_gguf_tokenizer"].value("pre", "") != "") {
    pre = tc["perpcomp_gguf_tokenizer"]["pre"].get<std::string>();
  } else if (gguf_arch == "qwen2" || gguf_arch == "qwen3") {
    pre = "qwen2";
  }
  out.emplace_back("tokenizer.ggml.pre", GgufString(pre));
  out.emplace_back("tokenizer.ggml.tokens", GgufStringArray(tokens));
  out.emplace_back("tokenizer.ggml.token_type", GgufI32Array(types));
  if (model == "llama") {
    std::unordered_map<std::string, float> made_by;
    for (size_t r = 0; r < merges.size(); ++r) {
      const size_t space = merges[r].find(' ');
      const std::string whole = merges[r].substr(0, space) + merges[r].substr(space + 1);
      made_by.emplace(whole, -static_cast<float>(r));
    }
    std::vector<float> scores(tokens.size(), -static_cast<float>(merges.size() + 1));
    for (size_t i = 0; i < tokens.size(); ++i) {
      auto it = made_by.find(tokens[i]);
      if (it != made_by.end()) scores[i] = it->second;
    }
    out.emplace_back("tokenizer.ggml.scores", GgufF32Array(scores));
    out.emplace_back("tokenizer.ggml.add_space_prefix", GgufBool(HasPrependMetaspace(doc.value("normalizer", nlohmann::json()))));
  }
  if (!merges.empty()) out.emplace_back("tokenizer.ggml.merges", GgufStringArray(merges));
  if (bos >= 0) out.emplace_back("tokenizer.ggml.bos_token_id", GgufU32(static_cast<uint32_t>(bos)));
  if (eos >= 0) out.emplace_back("tokenizer.ggml.eos_token_id", GgufU32(static_cast<uint32_t>(eos)));
  if (unk >= 0) out.emplace_back("tokenizer.ggml.unknown_token_id", GgufU32(static_cast<uint32_t>(unk)));
  if (pad >= 0) out.emplace_back("tokenizer.ggml.padding_token_id", GgufU32(static_cast<uint32_t>(pad)));
  out.emplace_back("tokenizer.ggml.add_bos_token", GgufBool(add_bos));
  if (tc.contains("chat_template") && tc["chat_template"].is_string()) {
    out.emplace_back("tokenizer.chat_template", GgufString(tc["chat_template"].get<std::string>()));
  }
  return out;
}

}  // namespace pc
