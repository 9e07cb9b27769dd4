// model/tokenizer/spec_util.h — reading the component objects of tokenizer.json.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/tokenizer/regex.h"

namespace pc::tok {

// The "type" string of a component object; errors name `where`.
std::string SpecType(const nlohmann::json& spec, const std::string& where);
// Optional members: the default when absent or null; a wrong type throws naming `where` and the key.
bool SpecBool(const nlohmann::json& spec, const std::string& key, bool fallback, const std::string& where);
std::string SpecString(const nlohmann::json& spec, const std::string& key, const std::string& fallback,
                       const std::string& where);
int64_t SpecInt(const nlohmann::json& spec, const std::string& key, int64_t fallback, const std::string& where);
// {"String": "..."} or {"Regex": "..."} under `key`.
Pattern SpecPattern(const nlohmann::json& spec, const std::string& key, const std::string& where);
// The array under `key` (required).
const nlohmann::json& SpecArray(const nlohmann::json& spec, const std::string& key, const std::string& where);
// model.merges: "a b" strings, or [a, b] pairs for all when some token contains a space.
nlohmann::json MergesToJson(const std::vector<std::pair<std::string, std::string>>& merges);
// "unsupported <what> type 'X' at <where> (supported: A, B, C)"
[[noreturn]] void ThrowUnsupported(const std::string& what, const std::string& type, const std::string& where,
                                   const std::vector<std::string>& supported);

}  // namespace pc::tok
