#include "core/json_util.h"

#include "core/error.h"
#include "core/fs.h"

namespace pc {

namespace {
// Validates syntax and depth without building a document and without exceptions.
class CheckingSax : public nlohmann::json_sax<nlohmann::json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return Enter(); }
  bool key(string_t&) override { return true; }
  bool end_object() override { --depth_; return true; }
  bool start_array(std::size_t) override { return Enter(); }
  bool end_array() override { --depth_; return true; }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) override {
    error_ = Str("invalid JSON at byte ", position, ": ", ex.what());
    return false;
  }
  const std::string& error() const { return error_; }

 private:
  bool Enter() {
    if (++depth_ > kMaxJsonDepth) {
      error_ = Str("JSON nested deeper than ", kMaxJsonDepth, " levels");
      return false;
    }
    return true;
  }
  int depth_ = 0;
  std::string error_;
};
}  // namespace

nlohmann::json ParseJson(const std::string& text, const std::string& where) {
  CheckingSax sax;
  bool ok = nlohmann::json::sax_parse(text, &sax, nlohmann::json::input_format_t::json, /*strict=*/true,
                                      /*ignore_comments=*/false);
  PC_CHECK(ok && sax.error().empty(), where, ": ", sax.error().empty() ? "invalid JSON" : sax.error());
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  PC_CHECK(!j.is_discarded(), where, ": invalid JSON");
  return j;
}

nlohmann::json LoadJsonFile(const std::string& path) {
  PC_CHECK(fs::Exists(path), "'", path, "' does not exist");
  return ParseJson(fs::ReadFile(path), path);
}

const nlohmann::json& JsonAt(const nlohmann::json& obj, const std::string& key, const std::string& where) {
  PC_CHECK(obj.is_object(), where, ": expected a JSON object");
  auto it = obj.find(key);
  PC_CHECK(it != obj.end(), where, ": missing key '", key, "'");
  return *it;
}

int64_t JsonInt(const nlohmann::json& obj, const std::string& key, const std::string& where) {
  const auto& v = JsonAt(obj, key, where);
  PC_CHECK(v.is_number_integer(), where, ": '", key, "' is ", v.type_name(), ", expected an integer");
  return v.get<int64_t>();
}

double JsonDouble(const nlohmann::json& obj, const std::string& key, const std::string& where) {
  const auto& v = JsonAt(obj, key, where);
  PC_CHECK(v.is_number(), where, ": '", key, "' is ", v.type_name(), ", expected a number");
  return v.get<double>();
}

std::string JsonString(const nlohmann::json& obj, const std::string& key, const std::string& where) {
  const auto& v = JsonAt(obj, key, where);
  PC_CHECK(v.is_string(), where, ": '", key, "' is ", v.type_name(), ", expected a string");
  return v.get<std::string>();
}

bool JsonBool(const nlohmann::json& obj, const std::string& key, const std::string& where) {
  const auto& v = JsonAt(obj, key, where);
  PC_CHECK(v.is_boolean(), where, ": '", key, "' is ", v.type_name(), ", expected true or false");
  return v.get<bool>();
}

}  // namespace pc
