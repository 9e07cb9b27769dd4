#include "model/tokenizer/spec_util.h"

#include "core/error.h"
#include "core/strings.h"

namespace pc::tok {

std::string SpecType(const nlohmann::json& spec, const std::string& where) {
  PC_CHECK(spec.is_object(), where, ": expected an object with a \"type\", got ", spec.type_name());
  auto it = spec.find("type");
  PC_CHECK(it != spec.end() && it->is_string(), where, ": missing string member \"type\"");
  return it->get<std::string>();
}

namespace {
const nlohmann::json* Member(const nlohmann::json& spec, const std::string& key) {
  auto it = spec.find(key);
  return it == spec.end() || it->is_null() ? nullptr : &*it;
}
}  // namespace

bool SpecBool(const nlohmann::json& spec, const std::string& key, bool fallback, const std::string& where) {
  const nlohmann::json* v = Member(spec, key);
  if (v == nullptr) return fallback;
  PC_CHECK(v->is_boolean(), where, ": \"", key, "\" is ", v->type_name(), ", expected true or false");
  return v->get<bool>();
}

std::string SpecString(const nlohmann::json& spec, const std::string& key, const std::string& fallback,
                       const std::string& where) {
  const nlohmann::json* v = Member(spec, key);
  if (v == nullptr) return fallback;
  PC_CHECK(v->is_string(), where, ": \"", key, "\" is ", v->type_name(), ", expected a string");
  return v->get<std::string>();
}

int64_t SpecInt(const nlohmann::json& spec, const std::string& key, int64_t fallback, const std::string& where) {
  const nlohmann::json* v = Member(spec, key);
  if (v == nullptr) return fallback;
  PC_CHECK(v->is_number_integer(), where, ": \"", key, "\" is ", v->type_name(), ", expected an integer");
  return v->get<int64_t>();
}

Pattern SpecPattern(const nlohmann::json& spec, const std::string& key, const std::string& where) {
  const nlohmann::json* v = Member(spec, key);
  PC_CHECK(v != nullptr, where, ": missing \"", key, "\"");
  PC_CHECK(v->is_object() && v->size() == 1, where, ": \"", key,
           "\" must be {\"String\": ...} or {\"Regex\": ...}, got ", v->dump());
  if (v->contains("String") && (*v)["String"].is_string()) return Pattern::Literal((*v)["String"].get<std::string>());
  if (v->contains("Regex") && (*v)["Regex"].is_string()) {
    return Pattern::FromRegex((*v)["Regex"].get<std::string>(), where + " " + key);
  }
  PC_THROW(where, ": \"", key, "\" must be {\"String\": ...} or {\"Regex\": ...}, got ", v->dump());
}

const nlohmann::json& SpecArray(const nlohmann::json& spec, const std::string& key, const std::string& where) {
  auto it = spec.find(key);
  PC_CHECK(it != spec.end() && it->is_array(), where, ": missing array \"", key, "\"");
  return *it;
}

nlohmann::json MergesToJson(const std::vector<std::pair<std::string, std::string>>& merges) {
  bool pairs = false;  // tokenizers >= 0.20 reads both forms; older ones only strings
  for (const auto& [a, b] : merges) pairs = pairs || a.find(' ') != std::string::npos || b.find(' ') != std::string::npos;
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [a, b] : merges) out.push_back(pairs ? nlohmann::json{a, b} : nlohmann::json(a + " " + b));
  return out;
}

void ThrowUnsupported(const std::string& what, const std::string& type, const std::string& where,
                      const std::vector<std::string>& supported) {
  PC_THROW(where, ": unsupported ", what, " type '", type, "' (supported: ", Join(supported, ", "), ")");
}

}  // namespace pc::tok
