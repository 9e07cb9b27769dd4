// recipes/recipe_spec.h — a compression recipe file, parsed and validated without a model.
//
// The schema, its defaults and its errors are in docs/RECIPES.md. Everything a later step may
// have to blame keeps its file:line: the method, each parameter, each ignore pattern, each
// override. What needs the method registry (is `awq` a method, is `bits` one of its
// parameters) or a model (does an override match any linear) is checked later, by the LibTorch
// side, using those locations.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "recipes/param_value.h"
#include "recipes/pattern.h"
#include "recipes/yaml_doc.h"

namespace pc::recipes {

template <typename T>
struct Located {
  T value{};
  SourceLoc loc;
};
// `value`, located where `node` is written.
template <typename T>
Located<T> LocatedAt(T value, const yaml::Node& node) {
  return Located<T>{std::move(value), node.loc()};
}

// How calibration windows are cut (docs/RECIPES.md).
enum class Windowing {
  kAwq,     // lines of at most L tokens, concatenated and cut into L-token blocks (llm-awq)
  kRandom,  // random L-token windows of documents longer than L (Wanda, SparseGPT, GPTQ)
};
// Which outputs feed the next block while compressing.
enum class Propagate {
  kOriginal,    // the uncompressed model's outputs
  kCompressed,  // the outputs of the blocks compressed so far
};
const char* WindowingName(Windowing w);  // "awq" | "random"
const char* PropagateName(Propagate p);  // "original" | "compressed"

// Calibration defaults of a recipe; unset fields fall back to the method's defaults, and
// command-line options override all of them.
struct CalibrationSpec {
  std::optional<Located<int64_t>> samples;  // 1 .. 1000000
  std::optional<Located<int64_t>> seq_len;  // 1 .. 1048576
  std::optional<Located<Windowing>> windowing;
  std::optional<Located<int64_t>> seed;  // >= 0
  std::optional<Located<std::string>> text_field;
  // Which calibration text: "self:N", or a name bound on the command line with
  // `--calib-text NAME=FILE` (docs/RECIPES.md "Recipe files", the calibration keys). Unset: the
  // text of `--calib`.
  std::optional<Located<std::string>> text;

  bool empty() const { return !samples && !seq_len && !windowing && !seed && !text_field && !text; }
};
// Sets every field that `over` sets.
void MergeCalibration(CalibrationSpec* base, const CalibrationSpec& over);

// One entry of `overrides:`; the first whose `match` is found in a module name applies.
struct OverrideSpec {
  Pattern match;
  std::optional<Located<std::string>> method;  // another method for matching linears
  ParamMap params;                             // merged over the recipe's params (see ResolveModule)
  std::optional<Located<std::string>> skip;    // a reason: matching linears are left as they are
  SourceLoc loc;                               // the line of the entry ("- match: ...")

  // "override at r.yaml:14 ('.*foo')", for messages such as "... matches no linear".
  std::string Describe() const;
};

struct RecipeSpec {
  Located<std::string> name;  // [A-Za-z0-9][A-Za-z0-9._-]*, at most 128 characters
  std::string description;
  Located<std::string> method;  // checked against the registry later
  ParamMap params;
  CalibrationSpec calibration;
  std::optional<Located<Propagate>> propagate;  // unset: the method's default
  std::vector<Pattern> ignore;                  // module names to leave alone
  std::vector<OverrideSpec> overrides;          // first match wins
  SourceLoc loc;                                // the file (line of the top-level mapping)
};

// Reads, parses and validates a recipe. Errors name file:line and what was expected.
RecipeSpec ParseRecipeFile(const std::string& path);
// The same for text; `where` names it in messages (a file name).
RecipeSpec ParseRecipeText(const std::string& yaml, const std::string& where);

// Canonical YAML: fixed key order, params sorted by name, strings quoted, numbers in their
// shortest exact form. ParseRecipeText(RecipeToYaml(r)) gives an equal recipe, and two recipes
// that differ only in layout, comments, key order or quoting give the same text.
std::string RecipeToYaml(const RecipeSpec& recipe);

// A recipe file to read: `name_or_path` itself when it is an existing file (a relative path is
// taken relative to `base_dir` when given, else to the working folder), else the shipped recipe
// `<recipes_dir>/<name>.yaml` ("awq-w4g128" or "awq-w4g128.yaml"). Unknown: an error, prefixed
// with `where` ("sweep.yaml:5") when given, listing the shipped names found in recipes_dir.
std::string ResolveRecipePath(const std::string& name_or_path, const std::string& recipes_dir,
                              const std::string& base_dir = "", const std::string& where = "");
// The names (without ".yaml") of the *.yaml files in `recipes_dir`, sorted; empty when absent.
std::vector<std::string> ListShippedRecipes(const std::string& recipes_dir);

// What the recipe says for one linear, by its Hugging Face module name (tensor name without
// ".weight"). Ignore patterns come first, then the first matching override. An override that
// names no method, or the recipe's method, inherits the recipe's params and merges its own over
// them; one that names another method starts from its own params only.
struct ModuleStep {
  bool skip = false;
  std::string skip_reason;  // the override's reason, or "matches ignore pattern '<re>'"
  std::string method;       // empty when skipped
  SourceLoc method_loc;
  ParamMap params;
  int ignore_index = -1;    // the ignore pattern that matched, or -1
  int override_index = -1;  // the override that matched, or -1
  SourceLoc rule_loc;       // where the deciding ignore pattern or override is written
};
ModuleStep ResolveModule(const RecipeSpec& recipe, const std::string& module_name);

// ---- building blocks shared with sweep files ----------------------------------------------

// Recipe, run and method names: [A-Za-z0-9][A-Za-z0-9._-]*, at most 128 characters.
bool IsValidName(const std::string& name);
// Throws "<loc>: <what> 'x y' may use only letters, digits, '.', '_' and '-' ...".
void CheckName(const std::string& name, const SourceLoc& loc, const std::string& what);
// The value of the key `key` (`value`: its node) as a name checked by CheckName (`what`: "recipe
// name"), located where it is written: NameAt(map.Require("name", "the recipe"), "name", ...).
Located<std::string> NameAt(const yaml::Node& value, const std::string& key, const std::string& what);
// A recipe's optional sections (description, calibration, propagate, ignore, overrides) from the
// mapping `map`, when present; others keys are the caller's.
void ParseRecipeSections(const yaml::Node& map, RecipeSpec* out);

}  // namespace pc::recipes
