#include "recipes/param_value.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/error.h"
#include "core/strings.h"

namespace pc::recipes {

ParamValue ParamValue::Int(int64_t v, SourceLoc loc) {
  ParamValue p;
  p.type_ = Type::kInt;
  p.int_ = v;
  p.loc_ = std::move(loc);
  return p;
}

ParamValue ParamValue::Double(double v, SourceLoc loc) {
  PC_ASSERT(std::isfinite(v), "non-finite parameter value");
  ParamValue p;
  p.type_ = Type::kDouble;
  p.double_ = v;
  p.loc_ = std::move(loc);
  return p;
}

ParamValue ParamValue::Bool(bool v, SourceLoc loc) {
  ParamValue p;
  p.type_ = Type::kBool;
  p.bool_ = v;
  p.loc_ = std::move(loc);
  return p;
}

ParamValue ParamValue::String(std::string v, SourceLoc loc) {
  ParamValue p;
  p.type_ = Type::kString;
  p.string_ = std::move(v);
  p.loc_ = std::move(loc);
  return p;
}

ParamValue ParamValue::List(std::vector<ParamValue> items, SourceLoc loc) {
  for (const auto& item : items) PC_ASSERT(!item.is_list(), "a parameter list holds another list");
  ParamValue p;
  p.type_ = Type::kList;
  p.list_ = std::move(items);
  p.loc_ = std::move(loc);
  return p;
}

namespace {

ParamValue ScalarFromNode(const yaml::Node& node, const std::string& what) {
  PC_ASSERT(node.IsScalar(), "ScalarFromNode on a collection");
  PC_CHECK(!node.IsNull(), node.loc().Str(), ": ", what, " has an empty value (write a value, or remove the key)");
  const std::string& t = node.text();
  if (node.quoted()) return ParamValue::String(t, node.loc());
  if (yaml::IsBoolText(t)) return ParamValue::Bool(node.AsBool(what), node.loc());
  if (yaml::IsIntText(t)) return ParamValue::Int(node.AsInt(what), node.loc());
  if (yaml::IsDoubleText(t)) return ParamValue::Double(node.AsDouble(what), node.loc());
  return ParamValue::String(t, node.loc());
}

}  // namespace

ParamValue ParamValue::FromNode(const yaml::Node& node, const std::string& what) {
  PC_CHECK(!node.IsMapping(), node.loc().Str(), ": ", what, " must be a value or a list of values, got a mapping");
  if (node.IsScalar()) return ScalarFromNode(node, what);
  std::vector<ParamValue> items;
  for (const auto& item : node.items()) {
    PC_CHECK(item.IsScalar(), item.loc().Str(), ": ", what, " must be a list of plain values, got ", item.Describe(),
             " inside the list");
    items.push_back(ScalarFromNode(item, what));
  }
  return List(std::move(items), node.loc());
}

std::string ParamValue::Got() const {
  if (type_ == Type::kList) return "the list " + ToYaml();
  if (type_ == Type::kString &&
      (yaml::IsIntText(string_) || yaml::IsDoubleText(string_) || yaml::IsBoolText(string_))) {
    return "the quoted string " + ToYaml();
  }
  return type_ == Type::kString ? "'" + string_ + "'" : "'" + ToYaml() + "'";
}

int64_t ParamValue::AsInt(const std::string& what) const {
  PC_CHECK(type_ == Type::kInt, loc_.Str(), ": ", what, " must be an integer, got ", Got());
  return int_;
}

double ParamValue::AsDouble(const std::string& what) const {
  PC_CHECK(type_ == Type::kInt || type_ == Type::kDouble, loc_.Str(), ": ", what, " must be a number, got ", Got());
  return type_ == Type::kInt ? static_cast<double>(int_) : double_;
}

bool ParamValue::AsBool(const std::string& what) const {
  PC_CHECK(type_ == Type::kBool, loc_.Str(), ": ", what, " must be true or false, got ", Got());
  return bool_;
}

std::string ParamValue::AsString(const std::string& what) const {
  PC_CHECK(type_ != Type::kList, loc_.Str(), ": ", what, " must be a string, got ", Got());
  return type_ == Type::kString ? string_ : ToYaml();
}

const std::vector<ParamValue>& ParamValue::AsList(const std::string& what) const {
  PC_CHECK(type_ == Type::kList, loc_.Str(), ": ", what, " must be a list, got ", Got());
  return list_;
}

std::string ShortestDouble(double v) {
  char buf[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

std::string ParamValue::ToYaml() const {
  switch (type_) {
    case Type::kInt:
      return std::to_string(int_);
    case Type::kBool:
      return bool_ ? "true" : "false";
    case Type::kString:
      return yaml::QuoteString(string_);
    case Type::kDouble: {
      std::string s = ShortestDouble(double_);
      if (s.find_first_of(".e") == std::string::npos) s += ".0";  // stays a double when read back
      return s;
    }
    case Type::kList: {
      std::vector<std::string> parts;
      for (const auto& item : list_) parts.push_back(item.ToYaml());
      return "[" + Join(parts, ", ") + "]";
    }
  }
  PC_ASSERT(false, "unknown parameter type");
  return "";
}

namespace {

// "2:4" -> "2of4" (N:M sparsity patterns); other text unchanged.
std::string SparsityToName(const std::string& s) {
  size_t colon = s.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == s.size()) return s;
  std::string n = s.substr(0, colon), m = s.substr(colon + 1);
  bool digits =
      n.find_first_not_of("0123456789") == std::string::npos && m.find_first_not_of("0123456789") == std::string::npos;
  return digits ? n + "of" + m : s;
}

// "1e-05" -> "1e-5", "1e+20" -> "1e20".
std::string CompactExponent(const std::string& s) {
  size_t e = s.find('e');
  if (e == std::string::npos) return s;
  std::string mant = s.substr(0, e), exp = s.substr(e + 1);
  std::string sign;
  if (!exp.empty() && (exp[0] == '-' || exp[0] == '+')) {
    if (exp[0] == '-') sign = "-";
    exp = exp.substr(1);
  }
  size_t nz = exp.find_first_not_of('0');
  exp = nz == std::string::npos ? "0" : exp.substr(nz);
  return mant + "e" + sign + exp;
}

}  // namespace

std::string ParamValue::ToNameText() const {
  switch (type_) {
    case Type::kInt:
      return std::to_string(int_);
    case Type::kBool:
      return bool_ ? "true" : "false";
    case Type::kString:
      return SparsityToName(string_);
    case Type::kDouble:
      return CompactExponent(ShortestDouble(double_));
    case Type::kList: {
      std::vector<std::string> parts;
      for (const auto& item : list_) parts.push_back(item.ToNameText());
      return Join(parts, "_");
    }
  }
  PC_ASSERT(false, "unknown parameter type");
  return "";
}

std::string ParamValue::TypeName() const {
  switch (type_) {
    case Type::kInt:
      return "an integer";
    case Type::kDouble:
      return "a number";
    case Type::kBool:
      return "a boolean";
    case Type::kString:
      return "a string";
    case Type::kList:
      return "a list";
  }
  return "";
}

bool ParamValue::operator==(const ParamValue& o) const {
  if (type_ != o.type_) return false;
  switch (type_) {
    case Type::kInt:
      return int_ == o.int_;
    case Type::kDouble:
      return double_ == o.double_;
    case Type::kBool:
      return bool_ == o.bool_;
    case Type::kString:
      return string_ == o.string_;
    case Type::kList:
      return list_ == o.list_;
  }
  return false;
}

bool IsParamName(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

ParamMap ParseParams(const yaml::Node& node, const std::string& what) {
  ParamMap out;
  if (node.IsNull()) return out;
  node.CheckIsMapping(what);
  for (size_t i = 0; i < node.keys().size(); ++i) {
    const yaml::Node& key = node.keys()[i];
    PC_CHECK(IsParamName(key.text()), key.loc().Str(), ": parameter name '", key.text(), "' in ", what,
             " must be an identifier ([A-Za-z_][A-Za-z0-9_]*)");
    out[key.text()] = ParamValue::FromNode(node.items()[i], "'" + key.text() + "'");
  }
  return out;
}

void MergeParams(ParamMap* base, const ParamMap& over) {
  for (const auto& [key, value] : over) (*base)[key] = value;
}

std::string FormatParams(const ParamMap& params) {
  std::vector<std::string> parts;
  for (const auto& [key, value] : params) parts.push_back(key + "=" + value.ToYaml());
  return Join(parts, ", ");
}

}  // namespace pc::recipes
