#include "compress/params.h"

#include <cmath>

#include "core/error.h"
#include "core/strings.h"

namespace pc {

ParamSpec ParamSpec::Int(std::string name, int64_t def, std::string doc, double min, double max,
                         std::vector<int64_t> also) {
  ParamSpec s;
  s.name = std::move(name);
  s.type = Type::kInt;
  s.default_value = def;
  s.doc = std::move(doc);
  s.min = min;
  s.max = max;
  s.also_allowed = std::move(also);
  return s;
}
ParamSpec ParamSpec::Double(std::string name, double def, std::string doc, double min, double max) {
  ParamSpec s;
  s.name = std::move(name);
  s.type = Type::kDouble;
  s.default_value = def;
  s.doc = std::move(doc);
  s.min = min;
  s.max = max;
  return s;
}
ParamSpec ParamSpec::Bool(std::string name, bool def, std::string doc) {
  ParamSpec s;
  s.name = std::move(name);
  s.type = Type::kBool;
  s.default_value = def;
  s.doc = std::move(doc);
  return s;
}
ParamSpec ParamSpec::String(std::string name, std::string def, std::string doc, std::vector<std::string> choices) {
  ParamSpec s;
  s.name = std::move(name);
  s.type = Type::kString;
  s.default_value = std::move(def);
  s.doc = std::move(doc);
  s.choices = std::move(choices);
  return s;
}

std::string ParamSpec::TypeName() const {
  switch (type) {
    case Type::kInt: return "an integer";
    case Type::kDouble: return "a number";
    case Type::kBool: return "true or false";
    case Type::kString: return "a string";
  }
  return "?";
}

std::string ParamSpec::RangeText() const {
  if (type == Type::kString) return choices.empty() ? "any text" : "one of: " + Join(choices, ", ");
  if (type == Type::kBool) return "true or false";
  std::string r;
  auto num = [&](double v) { return type == Type::kInt ? std::to_string(static_cast<int64_t>(v)) : FormatDouble(v); };
  if (std::isinf(min) && std::isinf(max)) r = "any";
  else if (std::isinf(max)) r = ">= " + num(min);
  else if (std::isinf(min)) r = "<= " + num(max);
  else r = num(min) + ".." + num(max);
  for (int64_t a : also_allowed) r += " or " + std::to_string(a);
  return r;
}

std::string ParamText(const ParamScalar& v) {
  if (std::holds_alternative<int64_t>(v)) return std::to_string(std::get<int64_t>(v));
  if (std::holds_alternative<double>(v)) return FormatDouble(std::get<double>(v), 10);
  if (std::holds_alternative<bool>(v)) return std::get<bool>(v) ? "true" : "false";
  return std::get<std::string>(v);
}

namespace {
const ParamScalar& Find(const std::map<std::string, ParamScalar>& m, const std::string& name) {
  auto it = m.find(name);
  PC_ASSERT(it != m.end(), "parameter '", name, "' was not declared by the method");
  return it->second;
}
}  // namespace

int64_t MethodParams::Int(const std::string& name) const { return std::get<int64_t>(Find(values_, name)); }
double MethodParams::Double(const std::string& name) const { return std::get<double>(Find(values_, name)); }
bool MethodParams::Bool(const std::string& name) const { return std::get<bool>(Find(values_, name)); }
const std::string& MethodParams::String(const std::string& name) const {
  return std::get<std::string>(Find(values_, name));
}

std::string MethodParams::Describe() const {
  std::vector<std::string> parts;
  for (const auto& [k, v] : values_) parts.push_back(k + "=" + ParamText(v));
  return Join(parts, ", ");
}

nlohmann::json MethodParams::ToJson() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : values_) std::visit([&](const auto& x) { j[k] = x; }, v);
  return j;
}

MethodParams ResolveParams(const std::string& method, const std::vector<ParamSpec>& specs,
                           const std::map<std::string, ParamScalar>& given,
                           const std::map<std::string, std::string>& where_by_name, const std::string& where) {
  auto loc = [&](const std::string& name) {
    auto it = where_by_name.find(name);
    return it != where_by_name.end() ? it->second : where;
  };
  std::vector<std::string> names;
  for (const auto& s : specs) names.push_back(s.name);
  for (const auto& [name, value] : given) {
    bool known = false;
    for (const auto& s : specs) known = known || s.name == name;
    PC_CHECK(known, loc(name), ": method '", method, "' has no parameter '", name, "' (its parameters: ",
             Join(names, ", "), ")");
  }
  MethodParams out;
  for (const auto& s : specs) {
    auto it = given.find(s.name);
    ParamScalar v = it == given.end() ? s.default_value : it->second;
    const std::string w = loc(s.name);
    switch (s.type) {
      case ParamSpec::Type::kInt: {
        PC_CHECK(std::holds_alternative<int64_t>(v), w, ": '", s.name, "' must be an integer, got ", ParamText(v));
        int64_t x = std::get<int64_t>(v);
        bool ok = (x >= s.min && x <= s.max);
        for (int64_t a : s.also_allowed) ok = ok || x == a;
        PC_CHECK(ok, w, ": '", s.name, "' = ", x, " is out of range (", s.RangeText(), ")");
        break;
      }
      case ParamSpec::Type::kDouble: {
        if (std::holds_alternative<int64_t>(v)) v = static_cast<double>(std::get<int64_t>(v));
        PC_CHECK(std::holds_alternative<double>(v), w, ": '", s.name, "' must be a number, got ", ParamText(v));
        double x = std::get<double>(v);
        PC_CHECK(std::isfinite(x) && x >= s.min && x <= s.max, w, ": '", s.name, "' = ", ParamText(v),
                 " is out of range (", s.RangeText(), ")");
        break;
      }
      case ParamSpec::Type::kBool:
        PC_CHECK(std::holds_alternative<bool>(v), w, ": '", s.name, "' must be true or false, got ", ParamText(v));
        break;
      case ParamSpec::Type::kString: {
        if (!std::holds_alternative<std::string>(v)) v = ParamText(v);  // 2:4 may be written unquoted
        const std::string& x = std::get<std::string>(v);
        bool ok = s.choices.empty();
        for (const auto& c : s.choices) ok = ok || c == x;
        PC_CHECK(ok, w, ": '", s.name, "' = '", x, "' is not allowed (", s.RangeText(), ")");
        break;
      }
    }
    out.Set(s.name, v);
  }
  return out;
}

}  // namespace pc
