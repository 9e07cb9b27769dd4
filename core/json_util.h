// core/json_util.h — JSON parsing with errors that name the file and position.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace pc {

// Nesting deeper than this is refused (hostile files; real configs nest < 10 levels).
inline constexpr int kMaxJsonDepth = 128;

// Parses `text`; errors name `where` (a file, or "file line N") and the byte position.
nlohmann::json ParseJson(const std::string& text, const std::string& where);
nlohmann::json LoadJsonFile(const std::string& path);

// Typed access: errors name `where`, the key and the expected type.
const nlohmann::json& JsonAt(const nlohmann::json& obj, const std::string& key, const std::string& where);
int64_t JsonInt(const nlohmann::json& obj, const std::string& key, const std::string& where);
double JsonDouble(const nlohmann::json& obj, const std::string& key, const std::string& where);
std::string JsonString(const nlohmann::json& obj, const std::string& key, const std::string& where);
bool JsonBool(const nlohmann::json& obj, const std::string& key, const std::string& where);

}  // namespace pc
