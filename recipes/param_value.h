// recipes/param_value.h — a method parameter as written in a recipe: int, double, bool, string or
// a list of those, with the file:line it came from.
//
// Recipes are parsed before the method registry is known, so a value is typed by how it is
// written: a plain 4 is an int, 0.5 or 1e-5 a double, true/false a bool, anything quoted or
// any other text a string, [a, b] a list. The registry later asks for the type it declares
// (AsInt, AsDouble, ...), and a mismatch names the file:line and the expected type.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "recipes/yaml_doc.h"

namespace pc::recipes {

using yaml::SourceLoc;

class ParamValue {
 public:
  enum class Type { kInt, kDouble, kBool, kString, kList };

  ParamValue() = default;
  static ParamValue Int(int64_t v, SourceLoc loc = {});
  static ParamValue Double(double v, SourceLoc loc = {});  // finite
  static ParamValue Bool(bool v, SourceLoc loc = {});
  static ParamValue String(std::string v, SourceLoc loc = {});
  static ParamValue List(std::vector<ParamValue> items, SourceLoc loc = {});  // items are not lists
  // From YAML (see the header comment); `what` names the value in errors ("'bits'"). Mappings,
  // empty values and lists of lists are refused.
  static ParamValue FromNode(const yaml::Node& node, const std::string& what);

  Type type() const { return type_; }
  const SourceLoc& loc() const { return loc_; }
  bool is_list() const { return type_ == Type::kList; }

  // Typed access for the method registry; `what` names the parameter ("'bits'"):
  //   "awq-w4g128.yaml:7: 'bits' must be an integer, got 'four'".
  int64_t AsInt(const std::string& what) const;
  double AsDouble(const std::string& what) const;  // ints are accepted
  bool AsBool(const std::string& what) const;
  std::string AsString(const std::string& what) const;  // any scalar, in its canonical text
  const std::vector<ParamValue>& AsList(const std::string& what) const;

  // Canonical YAML: 4, 0.5, 4.0, 1e-05, true, 'text', [3, 4]. Parses back to an equal value.
  std::string ToYaml() const;
  // Compact text for run names: 4, 0.5, 4 (for 4.0), 1e-5, true, text, "2:4" -> "2of4", [3, 4] -> 3_4.
  std::string ToNameText() const;
  // "an integer", "a number", "a boolean", "a string", "a list" (for messages).
  std::string TypeName() const;

  // Equal type and value; locations are ignored.
  bool operator==(const ParamValue& other) const;
  bool operator!=(const ParamValue& other) const { return !(*this == other); }

 private:
  std::string Got() const;  // "'four'" / "a list" for messages

  Type type_ = Type::kInt;
  int64_t int_ = 0;
  double double_ = 0;
  bool bool_ = false;
  std::string string_;
  std::vector<ParamValue> list_;
  SourceLoc loc_;
};

// Parameters by name (sorted, so the canonical text does not depend on the order written).
using ParamMap = std::map<std::string, ParamValue>;

// Parameter names are identifiers: [A-Za-z_][A-Za-z0-9_]*.
bool IsParamName(const std::string& name);

// Parses a mapping of parameters; keys must be identifiers ([A-Za-z_][A-Za-z0-9_]*). `what` names
// the mapping in errors ("params of override at r.yaml:14"). An empty value ("params:") is an empty map.
ParamMap ParseParams(const yaml::Node& node, const std::string& what);
// Overwrites `base`'s entries with `over`'s.
void MergeParams(ParamMap* base, const ParamMap& over);
// "bits=4, group_size=128" (for plans and dry runs).
std::string FormatParams(const ParamMap& params);
// Shortest decimal text that parses back to `v` exactly ("%.17g" would print 0.1 as 0.10000000000000001).
std::string ShortestDouble(double v);

}  // namespace pc::recipes
