#include "model/tokenizer/post_processor.h"

#include "core/error.h"
#include "core/strings.h"
#include "model/tokenizer/spec_util.h"

namespace pc::tok {

namespace {

// The ids of one special-token name of a template, from "special_tokens" or else the vocabulary.
std::vector<int32_t> TemplateTokenIds(const nlohmann::json& spec, const std::string& name,
                                      const std::function<int32_t(const std::string&)>& lookup,
                                      const std::string& where) {
  auto specials = spec.find("special_tokens");
  if (specials != spec.end() && specials->is_object() && specials->contains(name)) {
    const nlohmann::json& entry = (*specials)[name];
    const nlohmann::json& ids = SpecArray(entry, "ids", Str(where, ".special_tokens[\"", name, "\"]"));
    std::vector<int32_t> out;
    for (const auto& id : ids) {
      PC_CHECK(id.is_number_integer(), where, ".special_tokens[\"", name, "\"].ids: expected integers, got ", id.dump());
      out.push_back(id.get<int32_t>());
    }
    return out;
  }
  int32_t id = lookup(name);
  PC_CHECK(id >= 0, where, ": the template names special token '", name, "', which is neither in \"special_tokens\" nor in the vocabulary");
  return {id};
}

SequenceTemplate ParseTemplate(const nlohmann::json& spec, const std::function<int32_t(const std::string&)>& lookup,
                               const std::string& where) {
  auto single = spec.find("single");
  PC_CHECK(single != spec.end(), where, ": missing \"single\"");
  // Items: {"SpecialToken": {"id": "<s>"}} or {"Sequence": {"id": "A"}}; the string form "<s> $A" too.
  std::vector<std::pair<bool, std::string>> items;  // (is_sequence, special token name)
  if (single->is_string()) {
    for (const std::string& part : Split(single->get<std::string>(), ' ')) {
      if (part.empty()) continue;
      std::string name = part.substr(0, part.rfind(':') == std::string::npos ? part.size() : part.rfind(':'));
      items.emplace_back(!name.empty() && name[0] == '$', name);
    }
  } else {
    PC_CHECK(single->is_array(), where, ": \"single\" must be an array or a string");
    for (const auto& item : *single) {
      if (item.contains("SpecialToken")) {
        items.emplace_back(false, SpecString(item["SpecialToken"], "id", "", where + ".single"));
      } else if (item.contains("Sequence")) {
        items.emplace_back(true, "");
      } else {
        PC_THROW(where, ".single: expected {\"SpecialToken\": ...} or {\"Sequence\": ...}, got ", item.dump());
      }
    }
  }
  SequenceTemplate t;
  bool seen_sequence = false;
  for (const auto& [is_sequence, name] : items) {
    if (is_sequence) {
      PC_CHECK(!seen_sequence, where, ": \"single\" names the sequence twice");
      seen_sequence = true;
      continue;
    }
    std::vector<int32_t> ids = TemplateTokenIds(spec, name, lookup, where);
    auto& dst = seen_sequence ? t.suffix : t.prefix;
    dst.insert(dst.end(), ids.begin(), ids.end());
  }
  PC_CHECK(seen_sequence, where, ": \"single\" does not contain the sequence ($A)");
  return t;
}

int32_t PairId(const nlohmann::json& spec, const std::string& key, const std::string& where) {
  const nlohmann::json& v = SpecArray(spec, key, where);
  PC_CHECK(v.size() == 2 && v[1].is_number_integer(), where, ": \"", key, "\" must be [token, id], got ", v.dump());
  return v[1].get<int32_t>();
}

}  // namespace

SequenceTemplate ParsePostProcessor(const nlohmann::json& spec,
                                    const std::function<int32_t(const std::string&)>& lookup,
                                    const std::string& where) {
  if (spec.is_null()) return {};
  std::string type = SpecType(spec, where);
  if (type == "TemplateProcessing") return ParseTemplate(spec, lookup, where);
  if (type == "ByteLevel") return {};
  if (type == "RobertaProcessing" || type == "BertProcessing") {
    return SequenceTemplate{{PairId(spec, "cls", where)}, {PairId(spec, "sep", where)}};
  }
  if (type == "Sequence") {
    SequenceTemplate all;
    const auto& list = SpecArray(spec, "processors", where);
    for (size_t i = 0; i < list.size(); ++i) {  // each later processor wraps the result of the earlier ones
      SequenceTemplate t = ParsePostProcessor(list[i], lookup, Str(where, ".processors[", i, "]"));
      all.prefix.insert(all.prefix.begin(), t.prefix.begin(), t.prefix.end());
      all.suffix.insert(all.suffix.end(), t.suffix.begin(), t.suffix.end());
    }
    return all;
  }
  ThrowUnsupported("post_processor", type, where,
                   {"TemplateProcessing", "ByteLevel", "RobertaProcessing", "BertProcessing", "Sequence"});
}

}  // namespace pc::tok
