// compress/params.h — declared method parameters and their resolved, typed values.
//
// Every method declares its parameters (name, type, default, range or choices, doc) in its
// registry entry; recipes and the command line give values by name; Resolve() checks them
// once (unknown names, types, ranges) and fills defaults. Methods read typed values only.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

namespace pc {

using ParamScalar = std::variant<int64_t, double, bool, std::string>;

struct ParamSpec {
  enum class Type { kInt, kDouble, kBool, kString };
  std::string name;
  Type type = Type::kInt;
  ParamScalar default_value;
  std::string doc;
  double min = -std::numeric_limits<double>::infinity();  // numbers: inclusive range
  double max = std::numeric_limits<double>::infinity();
  std::vector<std::string> choices;  // strings: allowed values (empty: any)
  std::vector<int64_t> also_allowed;  // ints outside [min, max] that are allowed (group_size -1)

  static ParamSpec Int(std::string name, int64_t def, std::string doc, double min, double max,
                       std::vector<int64_t> also = {});
  static ParamSpec Double(std::string name, double def, std::string doc, double min, double max);
  static ParamSpec Bool(std::string name, bool def, std::string doc);
  static ParamSpec String(std::string name, std::string def, std::string doc, std::vector<std::string> choices);
  std::string TypeName() const;  // "an integer", ...
  std::string RangeText() const;  // "2..8", "one of: a, b"
};

std::string ParamText(const ParamScalar& v);  // 4, 0.5, true, unstructured

class MethodParams {
 public:
  int64_t Int(const std::string& name) const;
  double Double(const std::string& name) const;
  bool Bool(const std::string& name) const;
  const std::string& String(const std::string& name) const;
  bool Has(const std::string& name) const { return values_.count(name) > 0; }
  void Set(const std::string& name, ParamScalar v) { values_[name] = std::move(v); }
  const std::map<std::string, ParamScalar>& values() const { return values_; }
  std::string Describe() const;  // "bits=4, group_size=128, zero_point=true"
  nlohmann::json ToJson() const;

 private:
  std::map<std::string, ParamScalar> values_;
};

// Validates `given` against `specs` and fills defaults. `where` prefixes every error
// ("awq-w4g128.yaml:7" or "--param"); an unknown name lists the method's parameters.
MethodParams ResolveParams(const std::string& method, const std::vector<ParamSpec>& specs,
                           const std::map<std::string, ParamScalar>& given,
                           const std::map<std::string, std::string>& where_by_name, const std::string& where);

}  // namespace pc
