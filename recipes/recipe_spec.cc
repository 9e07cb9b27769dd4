#include "recipes/recipe_spec.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>

#include "core/error.h"
#include "core/fs.h"
#include "core/strings.h"

namespace pc::recipes {

namespace {

constexpr size_t kMaxNameLength = 128;
constexpr int64_t kMaxSamples = 1000000;
constexpr int64_t kMaxSeqLen = 1 << 20;

const std::vector<std::string> kRecipeKeys = {"name",        "description", "method", "params",
                                              "calibration", "propagate",   "ignore", "overrides"};
const std::vector<std::string> kCalibrationKeys = {"samples", "seq_len", "windowing", "seed", "text_field", "text"};
const std::vector<std::string> kOverrideKeys = {"match", "method", "params", "skip"};

int64_t IntInRange(const yaml::Node& node, const std::string& what, int64_t lo, int64_t hi) {
  int64_t v = node.AsInt(what);
  PC_CHECK(v >= lo && v <= hi, node.loc().Str(), ": ", what, " must be ",
           hi == INT64_MAX ? Str("at least ", lo) : Str("between ", lo, " and ", hi), ", got ", v);
  return v;
}

// One of `allowed`, by its text; the index into `allowed`.
size_t OneOf(const yaml::Node& node, const std::string& what, const std::vector<std::string>& allowed) {
  PC_CHECK(node.IsScalar() && !node.IsNull(), node.loc().Str(), ": ", what, " must be one of ", Join(allowed, ", "),
           ", got ", node.Describe());
  auto it = std::find(allowed.begin(), allowed.end(), node.text());
  PC_CHECK(it != allowed.end(), node.loc().Str(), ": ", what, " must be one of ", Join(allowed, ", "), ", got '",
           node.text(), "'");
  return static_cast<size_t>(it - allowed.begin());
}

CalibrationSpec ParseCalibration(const yaml::Node& node) {
  CalibrationSpec c;
  if (node.IsNull()) return c;
  node.CheckMapping("calibration", kCalibrationKeys);
  if (const auto* n = node.Find("samples"))
    c.samples = LocatedAt(IntInRange(*n, "calibration 'samples'", 1, kMaxSamples), *n);
  if (const auto* n = node.Find("seq_len"))
    c.seq_len = LocatedAt(IntInRange(*n, "calibration 'seq_len'", 1, kMaxSeqLen), *n);
  if (const auto* n = node.Find("windowing")) {
    size_t i = OneOf(*n, "calibration 'windowing'", {"awq", "random"});
    c.windowing = LocatedAt(i == 0 ? Windowing::kAwq : Windowing::kRandom, *n);
  }
  if (const auto* n = node.Find("seed")) c.seed = LocatedAt(IntInRange(*n, "calibration 'seed'", 0, INT64_MAX), *n);
  if (const auto* n = node.Find("text_field")) {
    c.text_field = LocatedAt(n->AsString("calibration 'text_field'"), *n);
    PC_CHECK(!c.text_field->value.empty(), n->loc().Str(), ": calibration 'text_field' must not be empty");
  }
  if (const auto* n = node.Find("text")) {
    c.text = LocatedAt(n->AsString("calibration 'text'"), *n);
    const std::string& t = c.text->value;
    int64_t self_windows = 0;
    if (!ParseSelfSpec(t, n->loc().Str() + ": calibration 'text'", &self_windows)) {
      PC_CHECK(IsValidName(t), n->loc().Str(), ": calibration 'text' '", t,
               "' must be self:N or the name of a text given as --calib-text NAME=FILE (letters, digits, '.', '_', "
               "'-'; at most ", kMaxNameLength, " characters)");
    }
  }
  return c;
}

// A list of regexes (`ignore:`); an empty value is an empty list.
std::vector<Pattern> ParsePatternList(const yaml::Node& node, const std::string& what) {
  std::vector<Pattern> out;
  if (node.IsNull()) return out;
  node.CheckSequence(what);
  for (const auto& item : node.items()) {
    PC_CHECK(item.IsScalar() && !item.IsNull(), item.loc().Str(), ": ", what,
             " entries must be regexes (strings), got ", item.Describe());
    out.push_back(Pattern::Compile(item.text(), item.loc(), what));
  }
  return out;
}

std::string ParseReason(const yaml::Node& node) {
  // `skip: true` is a likely slip for a reason; say what is wanted.
  PC_CHECK(node.IsScalar() && !node.IsNull() && (node.quoted() || !yaml::IsBoolText(node.text())), node.loc().Str(),
           ": 'skip' must be a reason (a string, e.g. skip: \"keep MLP dense\"), got ", node.Describe());
  return node.text();
}

OverrideSpec ParseOverride(const yaml::Node& node) {
  node.CheckMapping("an override", kOverrideKeys);
  OverrideSpec o;
  o.loc = node.loc();
  std::string at = Str("override at ", o.loc.Str());
  const yaml::Node& match = node.Require("match", "an override");
  PC_CHECK(match.IsScalar() && !match.IsNull(), match.loc().Str(), ": 'match' of ", at,
           " must be a regex (a string), got ", match.Describe());
  o.match = Pattern::Compile(match.text(), match.loc(), "'match' of " + at);
  if (const auto* n = node.Find("method")) {
    o.method = NameAt(*n, "method", "method name");
  }
  if (const auto* n = node.Find("params")) o.params = ParseParams(*n, "'params' of " + at);
  if (const auto* n = node.Find("skip")) o.skip = LocatedAt(ParseReason(*n), *n);
  PC_CHECK(!o.skip || (!o.method && !node.Find("params")), o.loc.Str(), ": ", at,
           " sets 'skip' together with 'method' or 'params'; a skipped linear is left as it is");
  PC_CHECK(o.skip || o.method || !o.params.empty(), o.loc.Str(), ": ", at,
           " does nothing; give it 'params', 'method' or 'skip'");
  return o;
}

std::vector<OverrideSpec> ParseOverrides(const yaml::Node& node) {
  std::vector<OverrideSpec> out;
  if (node.IsNull()) return out;
  node.CheckSequence("'overrides'");
  for (const auto& item : node.items()) out.push_back(ParseOverride(item));
  return out;
}

const yaml::Node& ParseRoot(const yaml::Document& doc, const std::string& where) {
  PC_CHECK(!doc.empty && !doc.root.IsNull(), where,
           ": the file is empty; a recipe is a mapping with at least 'name' and 'method'");
  doc.root.CheckMapping("a recipe", kRecipeKeys);
  return doc.root;
}

RecipeSpec ParseRecipeDocument(const yaml::Document& doc, const std::string& where) {
  const yaml::Node& root = ParseRoot(doc, where);
  RecipeSpec r;
  r.loc = root.loc();
  r.name = NameAt(root.Require("name", "the recipe"), "name", "recipe name");
  r.method = NameAt(root.Require("method", "the recipe"), "method", "method name");
  if (const auto* n = root.Find("params")) r.params = ParseParams(*n, "'params'");
  ParseRecipeSections(root, &r);
  return r;
}

}  // namespace

const char* WindowingName(Windowing w) { return w == Windowing::kAwq ? "awq" : "random"; }
const char* PropagateName(Propagate p) { return p == Propagate::kOriginal ? "original" : "compressed"; }

void MergeCalibration(CalibrationSpec* base, const CalibrationSpec& over) {
  if (over.samples) base->samples = over.samples;
  if (over.seq_len) base->seq_len = over.seq_len;
  if (over.windowing) base->windowing = over.windowing;
  if (over.seed) base->seed = over.seed;
  if (over.text_field) base->text_field = over.text_field;
  if (over.text) base->text = over.text;
}

std::string OverrideSpec::Describe() const { return Str("override at ", loc.Str(), " ('", match.pattern(), "')"); }

bool IsValidName(const std::string& name) {
  if (name.empty() || name.size() > kMaxNameLength || !std::isalnum(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) return false;
  }
  return true;
}

void CheckName(const std::string& name, const SourceLoc& loc, const std::string& what) {
  PC_CHECK(IsValidName(name), loc.Str(), ": ", what, " '", name,
           "' must start with a letter or digit, use only letters, digits, '.', '_' and '-', and have at most ",
           kMaxNameLength, " characters");
}

Located<std::string> NameAt(const yaml::Node& value, const std::string& key, const std::string& what) {
  Located<std::string> name = LocatedAt(value.AsString("'" + key + "'"), value);
  CheckName(name.value, value.loc(), what);
  return name;
}

void ParseRecipeSections(const yaml::Node& map, RecipeSpec* out) {
  if (const auto* n = map.Find("description")) out->description = n->IsNull() ? "" : n->AsString("'description'");
  if (const auto* n = map.Find("calibration")) out->calibration = ParseCalibration(*n);
  if (const auto* n = map.Find("propagate")) {
    size_t i = OneOf(*n, "'propagate'", {"original", "compressed"});
    out->propagate = LocatedAt(i == 0 ? Propagate::kOriginal : Propagate::kCompressed, *n);
  }
  if (const auto* n = map.Find("ignore")) out->ignore = ParsePatternList(*n, "'ignore'");
  if (const auto* n = map.Find("overrides")) out->overrides = ParseOverrides(*n);
}

RecipeSpec ParseRecipeText(const std::string& yaml, const std::string& where) {
  return ParseRecipeDocument(yaml::Parse(yaml, where), where);
}

RecipeSpec ParseRecipeFile(const std::string& path) { return ParseRecipeDocument(yaml::ParseFile(path), path); }

// ---- canonical YAML ----------------------------------------------------------------------

namespace {

// Names and enum values are written plainly when that reads back as the same string.
std::string PlainOrQuoted(const std::string& s) {
  return IsValidName(s) && !yaml::IsNullText(s) ? s : yaml::QuoteString(s);
}

void EmitParams(const ParamMap& params, const std::string& indent, std::string* out) {
  for (const auto& [key, value] : params) *out += indent + key + ": " + value.ToYaml() + "\n";
}

}  // namespace

std::string RecipeToYaml(const RecipeSpec& r) {
  std::string out = "name: " + PlainOrQuoted(r.name.value) + "\n";
  if (!r.description.empty()) out += "description: " + yaml::QuoteString(r.description) + "\n";
  out += "method: " + PlainOrQuoted(r.method.value) + "\n";
  if (!r.params.empty()) {
    out += "params:\n";
    EmitParams(r.params, "  ", &out);
  }
  const CalibrationSpec& c = r.calibration;
  if (!c.empty()) {
    out += "calibration:\n";
    if (c.samples) out += Str("  samples: ", c.samples->value, "\n");
    if (c.seq_len) out += Str("  seq_len: ", c.seq_len->value, "\n");
    if (c.windowing) out += Str("  windowing: ", WindowingName(c.windowing->value), "\n");
    if (c.seed) out += Str("  seed: ", c.seed->value, "\n");
    if (c.text_field) out += "  text_field: " + yaml::QuoteString(c.text_field->value) + "\n";
    if (c.text) out += "  text: " + yaml::QuoteString(c.text->value) + "\n";
  }
  if (r.propagate) out += Str("propagate: ", PropagateName(r.propagate->value), "\n");
  if (!r.ignore.empty()) {
    out += "ignore:\n";
    for (const auto& p : r.ignore) out += "  - " + yaml::QuoteString(p.pattern()) + "\n";
  }
  if (!r.overrides.empty()) {
    out += "overrides:\n";
    for (const auto& o : r.overrides) {
      out += "  - match: " + yaml::QuoteString(o.match.pattern()) + "\n";
      if (o.method) out += "    method: " + PlainOrQuoted(o.method->value) + "\n";
      if (!o.params.empty()) {
        out += "    params:\n";
        EmitParams(o.params, "      ", &out);
      }
      if (o.skip) out += "    skip: " + yaml::QuoteString(o.skip->value) + "\n";
    }
  }
  return out;
}

// ---- shipped recipes ---------------------------------------------------------------------

std::vector<std::string> ListShippedRecipes(const std::string& recipes_dir) {
  namespace stdfs = std::filesystem;
  std::vector<std::string> names;
  std::error_code ec;
  stdfs::directory_iterator it(recipes_dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const stdfs::path& p = it->path();
    if (p.extension() == ".yaml" && it->is_regular_file(ec)) names.push_back(p.stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string ResolveRecipePath(const std::string& name_or_path, const std::string& recipes_dir,
                              const std::string& base_dir, const std::string& where) {
  std::string prefix = where.empty() ? "" : where + ": ";
  PC_CHECK(!name_or_path.empty(), prefix, "expected a recipe name or a path, got an empty value");
  bool relative = name_or_path[0] != '/';
  std::string path = relative && !base_dir.empty() ? fs::Join(base_dir, name_or_path) : name_or_path;
  if (fs::Exists(path)) {
    PC_CHECK(!fs::IsDirectory(path), prefix, "recipe '", name_or_path, "' is a folder, expected a recipe file");
    return path;
  }
  if (name_or_path.find('/') == std::string::npos) {
    std::string stem = EndsWith(name_or_path, ".yaml") ? name_or_path.substr(0, name_or_path.size() - 5) : name_or_path;
    std::string shipped = fs::Join(recipes_dir, stem + ".yaml");
    if (!stem.empty() && fs::Exists(shipped) && !fs::IsDirectory(shipped)) return shipped;
  }
  std::vector<std::string> names = ListShippedRecipes(recipes_dir);
  PC_THROW(prefix, "recipe '", name_or_path, "' is neither an existing file",
           base_dir.empty() ? "" : " (relative to '" + base_dir + "')", " nor a shipped recipe in '", recipes_dir,
           "' (", names.empty() ? std::string("no shipped recipes found there") : "shipped: " + Join(names, ", "), ")");
}

// ---- one module --------------------------------------------------------------------------

ModuleStep ResolveModule(const RecipeSpec& recipe, const std::string& module_name) {
  ModuleStep step;
  for (size_t i = 0; i < recipe.ignore.size(); ++i) {
    if (!recipe.ignore[i].Matches(module_name)) continue;
    step.skip = true;
    step.skip_reason = "matches ignore pattern '" + recipe.ignore[i].pattern() + "'";
    step.ignore_index = static_cast<int>(i);
    step.rule_loc = recipe.ignore[i].loc();
    return step;
  }
  step.method = recipe.method.value;
  step.method_loc = recipe.method.loc;
  step.params = recipe.params;
  for (size_t i = 0; i < recipe.overrides.size(); ++i) {
    const OverrideSpec& o = recipe.overrides[i];
    if (!o.match.Matches(module_name)) continue;
    step.override_index = static_cast<int>(i);
    step.rule_loc = o.loc;
    if (o.skip) {
      step.skip = true;
      step.skip_reason = o.skip->value;
      step.method.clear();
      step.params.clear();
      return step;
    }
    if (o.method && o.method->value != recipe.method.value) step.params.clear();
    if (o.method) {
      step.method = o.method->value;
      step.method_loc = o.method->loc;
    }
    MergeParams(&step.params, o.params);
    return step;
  }
  return step;
}

}  // namespace pc::recipes
