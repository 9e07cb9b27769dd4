// recipes/sweep_spec.h — a sweep file: explicit runs and parameter grids, expanded into
// uniquely named recipes (docs/RECIPES.md "Sweeps").
//
// Parsing checks the file itself (keys, types, empty grid axes); ExpandSweep reads the recipes
// the runs name, expands the grids in a fixed order and checks the run names (valid, unique).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "recipes/recipe_spec.h"

namespace pc::recipes {

// One entry of `runs:`.
struct SweepRunEntry {
  Located<std::string> recipe;               // a shipped name or a path (relative to the sweep file)
  std::optional<Located<std::string>> name;  // a new name for the run
  ParamMap params;                           // merged over the recipe's params
  SourceLoc loc;
};

// One key of a grid's `params:`: a list is an axis, anything else a fixed value.
struct GridParam {
  std::string key;
  bool axis = false;
  std::vector<ParamValue> values;  // the axis' values, or the one fixed value
  SourceLoc loc;
};

// One entry of `grids:`.
struct GridSpec {
  std::optional<Located<std::string>> method;         // exactly one of method and recipe
  std::optional<Located<std::string>> recipe;         // a base recipe whose params the grid overrides
  std::optional<Located<std::string>> name_template;  // "rtn-w{bits}g{group_size}"
  std::vector<GridParam> params;                      // in the order written
  RecipeSpec sections;  // description, calibration, propagate, ignore, overrides given in the grid
  bool sets_ignore = false, sets_overrides = false;
  SourceLoc loc;
};

struct SweepSpec {
  Located<std::string> name;
  std::string description;
  std::string recipes_dir;  // where shipped recipe names are looked up
  std::string base_dir;     // the sweep file's folder: relative recipe paths start here
  std::vector<SweepRunEntry> runs;
  std::vector<GridSpec> grids;
  // `primary:` — the comparisons ρ(perp) − ρ(iso) declared before looking, as [perp, iso]
  // predictor names (docs/RANKING.md); empty: rank's defaults. Checked by rank.
  std::vector<std::pair<std::string, std::string>> primary;
  SourceLoc loc;
};

// `default_recipes_dir` is the shipped recipes folder, used unless the file sets recipes_dir
// (relative to the sweep file).
SweepSpec ParseSweepFile(const std::string& path, const std::string& default_recipes_dir);
SweepSpec ParseSweepText(const std::string& yaml, const std::string& where, const std::string& default_recipes_dir);

// One expanded run: a complete recipe and where it came from.
struct SweepRun {
  RecipeSpec recipe;
  std::string origin;       // "runs entry at s.yaml:5" / "grid at s.yaml:9 (bits=4, group_size=128)"
  SourceLoc origin_loc;     // the runs or grids entry
  std::string recipe_path;  // the recipe file read, "" for method grids
  ParamMap grid_point;      // the grid axes' values of this run (empty for runs entries)
};

// Runs in order: `runs:` as listed, then each grid as listed, a grid's points as nested loops
// over its axes in the order written (the last axis varies fastest). At most kMaxSweepRuns.
std::vector<SweepRun> ExpandSweep(const SweepSpec& sweep);
inline constexpr size_t kMaxSweepRuns = 10000;

// "rtn-w3g128  rtn  bits=3, group_size=128  (grid at s.yaml:9)", for --dry-run.
std::string DescribeRun(const SweepRun& run);

}  // namespace pc::recipes
