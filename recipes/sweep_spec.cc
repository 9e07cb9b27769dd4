#include "recipes/sweep_spec.h"

#include <map>

#include "core/error.h"
#include "core/fs.h"
#include "core/strings.h"

namespace pc::recipes {

namespace {

const std::vector<std::string> kSweepKeys = {"name", "description", "recipes_dir", "runs", "grids", "primary"};
const std::vector<std::string> kRunKeys = {"recipe", "name", "params"};
const std::vector<std::string> kGridKeys = {"method",      "recipe",    "name",   "description", "params",
                                            "calibration", "propagate", "ignore", "overrides"};

SweepRunEntry ParseRunEntry(const yaml::Node& node) {
  node.CheckMapping("a runs entry", kRunKeys);
  SweepRunEntry e;
  e.loc = node.loc();
  const yaml::Node& recipe = node.Require("recipe", "a runs entry");
  e.recipe = LocatedAt(recipe.AsString("'recipe'"), recipe);
  if (const auto* n = node.Find("name")) {
    e.name = NameAt(*n, "name", "run name");
  }
  if (const auto* n = node.Find("params"))
    e.params = ParseParams(*n, Str("'params' of the runs entry at ", e.loc.Str()));
  return e;
}

GridParam ParseGridParam(const yaml::Node& key, const yaml::Node& value, const std::string& grid) {
  GridParam p;
  p.key = key.text();
  p.loc = key.loc();
  std::string what = "'" + p.key + "'";
  PC_CHECK(IsParamName(p.key), key.loc().Str(), ": parameter name '", p.key, "' in ", grid,
           " must be an identifier ([A-Za-z_][A-Za-z0-9_]*)");
  if (!value.IsSequence()) {
    p.values.push_back(ParamValue::FromNode(value, what));
    return p;
  }
  p.axis = true;
  PC_CHECK(value.size() > 0, value.loc().Str(), ": grid axis ", what, " is an empty list, so the ", grid,
           " expands to zero runs");
  for (const auto& item : value.items()) {
    ParamValue v = ParamValue::FromNode(item, what);  // a nested list is one list-valued point
    for (const auto& seen : p.values) {
      PC_CHECK(seen != v, item.loc().Str(), ": grid axis ", what, " lists ", v.ToYaml(), " twice (first at line ",
               seen.loc().line, ")");
    }
    p.values.push_back(std::move(v));
  }
  return p;
}

GridSpec ParseGrid(const yaml::Node& node) {
  node.CheckMapping("a grid", kGridKeys);
  GridSpec g;
  g.loc = node.loc();
  std::string grid = "grid at " + g.loc.Str();
  if (const auto* n = node.Find("method")) {
    g.method = NameAt(*n, "method", "method name");
  }
  if (const auto* n = node.Find("recipe")) g.recipe = LocatedAt(n->AsString("'recipe'"), *n);
  PC_CHECK(g.method.has_value() != g.recipe.has_value(), g.loc.Str(), ": the ", grid,
           " must set exactly one of 'method' (a grid over a method's params) and 'recipe' (a grid over a recipe's "
           "params)");
  if (const auto* n = node.Find("name")) g.name_template = LocatedAt(n->AsString("'name'"), *n);
  if (const auto* n = node.Find("params"); n != nullptr && !n->IsNull()) {
    n->CheckIsMapping("'params' of the " + grid);
    for (size_t i = 0; i < n->keys().size(); ++i) g.params.push_back(ParseGridParam(n->keys()[i], n->items()[i], grid));
  }
  ParseRecipeSections(node, &g.sections);
  g.sets_ignore = node.Find("ignore") != nullptr;
  g.sets_overrides = node.Find("overrides") != nullptr;
  return g;
}

SweepSpec ParseSweepDocument(const yaml::Document& doc, const std::string& where, const std::string& default_dir) {
  PC_CHECK(!doc.empty && !doc.root.IsNull(), where,
           ": the file is empty; a sweep is a mapping with 'name' and 'runs' and/or 'grids'");
  const yaml::Node& root = doc.root;
  root.CheckMapping("a sweep", kSweepKeys);
  SweepSpec s;
  s.loc = root.loc();
  s.base_dir = fs::Parent(where);
  s.name = NameAt(root.Require("name", "the sweep"), "name", "sweep name");
  if (const auto* n = root.Find("description")) s.description = n->IsNull() ? "" : n->AsString("'description'");
  s.recipes_dir = default_dir;
  if (const auto* n = root.Find("recipes_dir")) {
    std::string dir = n->AsString("'recipes_dir'");
    s.recipes_dir = dir[0] == '/' ? dir : fs::Join(s.base_dir, dir);
    PC_CHECK(fs::IsDirectory(s.recipes_dir), n->loc().Str(), ": recipes_dir '", dir, "' is not a folder (looked at '",
             s.recipes_dir, "')");
  }
  if (const auto* n = root.Find("runs"); n != nullptr && !n->IsNull()) {
    n->CheckSequence("'runs'");
    for (const auto& item : n->items()) s.runs.push_back(ParseRunEntry(item));
  }
  if (const auto* n = root.Find("grids"); n != nullptr && !n->IsNull()) {
    n->CheckSequence("'grids'");
    for (const auto& item : n->items()) s.grids.push_back(ParseGrid(item));
  }
  if (const auto* n = root.Find("primary"); n != nullptr && !n->IsNull()) {
    n->CheckSequence("'primary'");
    for (const auto& item : n->items()) {
      item.CheckSequence("an entry of 'primary'");
      PC_CHECK(item.items().size() == 2, item.loc().Str(), ": an entry of 'primary' is [perp predictor, iso predictor], got ",
               item.items().size(), " names");
      s.primary.emplace_back(item.items()[0].AsString("a perp predictor name"),
                             item.items()[1].AsString("an iso predictor name"));
    }
  }
  PC_CHECK(!s.runs.empty() || !s.grids.empty(), s.loc.Str(), ": the sweep defines no runs (give 'runs' or 'grids')");
  return s;
}

// ---- expansion ---------------------------------------------------------------------------

// A name template split into literal text and {param} references.
struct TemplatePart {
  bool is_key = false;
  std::string text;  // literal text or the param name
};

std::vector<TemplatePart> ParseTemplate(const Located<std::string>& tmpl) {
  std::vector<TemplatePart> parts;
  const std::string& t = tmpl.value;
  std::string where = Str(tmpl.loc.Str(), ": name template '", t, "'");
  size_t i = 0;
  while (i < t.size()) {
    size_t open = t.find('{', i), close = t.find('}', i);
    PC_CHECK(close == std::string::npos || (open != std::string::npos && open < close), where,
             " has a '}' without a '{' at offset ", close);
    if (open == std::string::npos) {
      parts.push_back({false, t.substr(i)});
      break;
    }
    if (open > i) parts.push_back({false, t.substr(i, open - i)});
    PC_CHECK(close != std::string::npos, where, " has an unclosed '{' at offset ", open);
    std::string key = t.substr(open + 1, close - open - 1);
    PC_CHECK(!key.empty(), where, " has an empty '{}' at offset ", open, "; write {param}");
    parts.push_back({true, key});
    i = close + 1;
  }
  return parts;
}

std::string ParamNames(const ParamMap& params) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : params) keys.push_back(key);
  return keys.empty() ? "none" : Join(keys, ", ");
}

std::string ExpandTemplate(const Located<std::string>& tmpl, const ParamMap& params) {
  std::string out;
  for (const auto& part : ParseTemplate(tmpl)) {
    if (!part.is_key) {
      out += part.text;
      continue;
    }
    auto it = params.find(part.text);
    PC_CHECK(it != params.end(), tmpl.loc.Str(), ": name template '", tmpl.value, "' names '", part.text,
             "', which is not a param of this grid (params: ", ParamNames(params), ")");
    out += it->second.ToNameText();
  }
  return out;
}

// Number of points of a grid; refuses grids over kMaxSweepRuns.
size_t GridSize(const GridSpec& g) {
  size_t n = 1;
  for (const auto& p : g.params) {
    if (!p.axis) continue;
    PC_CHECK(n <= kMaxSweepRuns / p.values.size(), g.loc.Str(), ": the grid expands to more than ", kMaxSweepRuns,
             " runs");
    n *= p.values.size();
  }
  return n;
}

std::string DefaultGridName(const GridSpec& g, const std::string& base, const ParamMap& point) {
  std::string name = base;
  for (const auto& p : g.params) {
    if (p.axis) name += "-" + p.key + point.at(p.key).ToNameText();
  }
  return name;
}

// The recipe a grid point starts from: the base recipe, or an empty one for the method.
RecipeSpec GridBase(const GridSpec& g, const SweepSpec& s, std::string* path) {
  if (g.method) {
    RecipeSpec r;
    r.method = *g.method;
    r.loc = g.loc;
    return r;
  }
  *path = ResolveRecipePath(g.recipe->value, s.recipes_dir, s.base_dir, g.recipe->loc.Str());
  return ParseRecipeFile(*path);
}

void ExpandGrid(const GridSpec& g, const SweepSpec& s, std::vector<SweepRun>* out) {
  size_t total = GridSize(g);
  PC_CHECK(out->size() + total <= kMaxSweepRuns, g.loc.Str(), ": the sweep expands to more than ", kMaxSweepRuns,
           " runs");
  std::string path;
  RecipeSpec base = GridBase(g, s, &path);
  std::string base_name = g.method ? g.method->value : base.name.value;
  std::vector<size_t> index(g.params.size(), 0);  // odometer over the axes; the last varies fastest
  for (size_t n = 0; n < total; ++n) {
    ParamMap point;
    for (size_t k = 0; k < g.params.size(); ++k) {
      if (g.params[k].axis) point[g.params[k].key] = g.params[k].values[index[k]];
    }
    SweepRun run;
    run.recipe = base;
    run.recipe_path = path;
    run.origin_loc = g.loc;
    run.grid_point = point;
    run.origin = "grid at " + g.loc.Str() + (point.empty() ? "" : " (" + FormatParams(point) + ")");
    RecipeSpec& r = run.recipe;
    for (const auto& p : g.params) {
      if (!p.axis) r.params[p.key] = p.values[0];
    }
    MergeParams(&r.params, point);
    if (!g.sections.description.empty()) r.description = g.sections.description;
    MergeCalibration(&r.calibration, g.sections.calibration);
    if (g.sections.propagate) r.propagate = g.sections.propagate;
    if (g.sets_ignore) r.ignore = g.sections.ignore;
    if (g.sets_overrides) r.overrides = g.sections.overrides;
    std::string name =
        g.name_template ? ExpandTemplate(*g.name_template, r.params) : DefaultGridName(g, base_name, point);
    SourceLoc name_loc = g.name_template ? g.name_template->loc : g.loc;
    CheckName(name, name_loc, Str("run name (", run.origin, ")"));
    r.name = Located<std::string>{name, name_loc};
    out->push_back(std::move(run));
    for (size_t k = g.params.size(); k-- > 0;) {  // advance the odometer
      if (!g.params[k].axis) continue;
      if (++index[k] < g.params[k].values.size()) break;
      index[k] = 0;
    }
  }
}

SweepRun ExpandRunEntry(const SweepRunEntry& e, const SweepSpec& s) {
  SweepRun run;
  run.recipe_path = ResolveRecipePath(e.recipe.value, s.recipes_dir, s.base_dir, e.recipe.loc.Str());
  run.recipe = ParseRecipeFile(run.recipe_path);
  run.origin_loc = e.loc;
  run.origin = "runs entry at " + e.loc.Str();
  MergeParams(&run.recipe.params, e.params);
  if (e.name) run.recipe.name = *e.name;
  return run;
}

void CheckUniqueNames(const std::vector<SweepRun>& runs, const SweepSpec& s) {
  std::map<std::string, std::vector<const SweepRun*>> by_name;
  std::vector<std::string> order;  // names in first-seen order, for a stable message
  for (const auto& run : runs) {
    auto& list = by_name[run.recipe.name.value];
    if (list.empty()) order.push_back(run.recipe.name.value);
    list.push_back(&run);
  }
  std::vector<std::string> dups;
  for (const auto& name : order) {
    const auto& list = by_name[name];
    if (list.size() < 2) continue;
    std::vector<std::string> origins;
    for (const SweepRun* run : list) origins.push_back(run->origin);
    dups.push_back("'" + name + "' from " + Join(origins, " and "));
  }
  PC_CHECK(dups.empty(), s.loc.file,
           ": duplicate run names (every run needs its own name: rename runs entries, or "
           "put the varying params into the grid's name template): ",
           Join(dups, "; "));
}

}  // namespace

SweepSpec ParseSweepText(const std::string& yaml, const std::string& where, const std::string& default_recipes_dir) {
  return ParseSweepDocument(yaml::Parse(yaml, where), where, default_recipes_dir);
}

SweepSpec ParseSweepFile(const std::string& path, const std::string& default_recipes_dir) {
  return ParseSweepDocument(yaml::ParseFile(path), path, default_recipes_dir);
}

std::vector<SweepRun> ExpandSweep(const SweepSpec& s) {
  std::vector<SweepRun> runs;
  PC_CHECK(s.runs.size() <= kMaxSweepRuns, s.loc.Str(), ": the sweep expands to more than ", kMaxSweepRuns, " runs");
  for (const auto& e : s.runs) runs.push_back(ExpandRunEntry(e, s));
  for (const auto& g : s.grids) ExpandGrid(g, s, &runs);
  CheckUniqueNames(runs, s);
  return runs;
}

std::string DescribeRun(const SweepRun& run) {
  const RecipeSpec& r = run.recipe;
  std::string params = r.params.empty() ? "(default params)" : FormatParams(r.params);
  return Str(r.name.value, "  ", r.method.value, "  ", params, "  (", run.origin, ")");
}

}  // namespace pc::recipes
