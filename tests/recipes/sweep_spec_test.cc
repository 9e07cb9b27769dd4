#include "recipes/sweep_spec.h"

#include <catch2/catch.hpp>
#include <chrono>

#include "core/error.h"
#include "tests/test_support.h"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using pc::recipes::ParamValue;
using pc::recipes::SweepRun;

namespace {

std::string DataDir() { return pc::test::SourceDir() + "/tests/recipes/data"; }
// Sweeps written inline live (virtually) beside the example sweep: relative paths start there,
// shipped names are looked up in the data folder.
std::string Where() { return DataDir() + "/sweeps/s.yaml"; }

pc::recipes::SweepSpec S(const std::string& text) { return pc::recipes::ParseSweepText(text, Where(), DataDir()); }
std::vector<SweepRun> X(const std::string& text) { return pc::recipes::ExpandSweep(S(text)); }

std::vector<std::string> Names(const std::vector<SweepRun>& runs) {
  std::vector<std::string> out;
  for (const auto& r : runs) out.push_back(r.recipe.name.value);
  return out;
}

using Names_t = std::vector<std::string>;

}  // namespace

TEST_CASE("sweep: the example expands in order with unique names", "[recipes]") {
  std::string path = DataDir() + "/sweeps/example.yaml";
  auto spec = pc::recipes::ParseSweepFile(path, "/nonexistent");  // the file sets recipes_dir: ..
  CHECK(spec.name.value == "example");
  CHECK(spec.description == "a few baselines and two grids");
  CHECK(spec.runs.size() == 2);
  CHECK(spec.grids.size() == 2);
  auto runs = pc::recipes::ExpandSweep(spec);
  CHECK(Names(runs) == Names_t{"rtn-w4g128", "awq-w4g128-duo", "rtn-w2g128", "rtn-w2g-1", "rtn-w3g128", "rtn-w3g-1",
                               "wanda-2of4-s0.5", "wanda-4of8-s0.5"});
  // runs entries: the recipe file, renamed, params merged over the recipe's.
  CHECK(runs[0].recipe_path == DataDir() + "/sweeps/../rtn-w4g128.yaml");
  CHECK(runs[0].origin == "runs entry at " + path + ":6");
  CHECK(runs[1].recipe_path == DataDir() + "/sweeps/../awq-w4g128.yaml");
  CHECK(runs[1].recipe.params.at("duo_scaling").AsBool("d"));
  CHECK(runs[1].recipe.params.at("duo_scaling").loc().Str() == path + ":9");
  CHECK(runs[1].recipe.params.at("bits").loc().Str() == DataDir() + "/sweeps/../awq-w4g128.yaml:6");
  CHECK(runs[1].recipe.overrides.size() == 3);
  // Method grids: fixed params, calibration and ignore of the grid; the point's values.
  const auto& g = runs[3].recipe;
  CHECK(g.method.value == "rtn");
  CHECK(pc::recipes::FormatParams(g.params) == "bits=2, group_size=-1, zero_point=true");
  CHECK(pc::recipes::FormatParams(runs[3].grid_point) == "bits=2, group_size=-1");
  CHECK(runs[3].origin == "grid at " + path + ":11 (bits=2, group_size=-1)");
  CHECK(g.calibration.samples->value == 64);
  CHECK(g.ignore.size() == 1);
  CHECK(runs[3].recipe_path.empty());
  // Recipe grids: everything of the base recipe, the axis merged over its params.
  const auto& w = runs[7].recipe;
  CHECK(w.method.value == "wanda");
  CHECK(w.params.at("pattern").AsString("p") == "4:8");
  CHECK(w.params.at("sparsity").AsDouble("s") == 0.5);
  CHECK(w.calibration.seq_len->value == 2048);
  CHECK(pc::recipes::DescribeRun(runs[7]) ==
        "wanda-4of8-s0.5  wanda  pattern='4:8', sparsity=0.5  (grid at " + path + ":16 (pattern='4:8'))");
  // Every expanded run is a complete recipe that round-trips.
  for (const auto& run : runs) {
    std::string yaml = pc::recipes::RecipeToYaml(run.recipe);
    CHECK(pc::recipes::RecipeToYaml(pc::recipes::ParseRecipeText(yaml, "derived.yaml")) == yaml);
  }
}

TEST_CASE("sweep: grid order is nested loops over the axes as written, the last fastest", "[recipes]") {
  auto runs =
      X("name: s\ngrids:\n  - method: m\n    name: 'm-{c}-{a}-{b}'\n"
        "    params:\n      c: [x, y]\n      a: [1, 2, 3]\n      fixed: 0.25\n      b: [true, false]\n");
  CHECK(Names(runs) == Names_t{"m-x-1-true", "m-x-1-false", "m-x-2-true", "m-x-2-false", "m-x-3-true", "m-x-3-false",
                               "m-y-1-true", "m-y-1-false", "m-y-2-true", "m-y-2-false", "m-y-3-true", "m-y-3-false"});
  for (const auto& r : runs) CHECK(r.recipe.params.at("fixed").AsDouble("f") == 0.25);
  // No template: the method (or base recipe) name and each axis as key+value, in the order written.
  auto plain = X("name: s\ngrids:\n  - method: m\n    params: {b: [1, 2], a: [0.5], z: 9}\n");
  CHECK(Names(plain) == Names_t{"m-b1-a0.5", "m-b2-a0.5"});
  auto single = X("name: s\ngrids:\n  - method: m\n    params: {z: 9}\n");  // no axes: one run
  CHECK(Names(single) == Names_t{"m"});
  auto based = X("name: s\ngrids:\n  - recipe: rtn-w4g128\n    params: {bits: [3]}\n");
  CHECK(Names(based) == Names_t{"rtn-w4g128-bits3"});
}

TEST_CASE("sweep: values in names are formatted compactly and deterministically", "[recipes]") {
  auto runs =
      X("name: s\ngrids:\n  - method: m\n    name: 'm-{v}'\n"
        "    params:\n      v: [4, 0.5, 1e-5, 2.5e+20, -1, 0.1, true, \"2:4\", abc, [1, 2], 1.0e-3, 7.0]\n");
  CHECK(Names(runs) == Names_t{"m-4", "m-0.5", "m-1e-5", "m-2.5e20", "m--1", "m-0.1", "m-true", "m-2of4", "m-abc",
                               "m-1_2", "m-0.001", "m-7"});
  CHECK(ParamValue::Double(4.0).ToNameText() == "4");
  CHECK(ParamValue::Double(0.5).ToNameText() == "0.5");
  CHECK(ParamValue::Double(1e-5).ToNameText() == "1e-5");
  CHECK(ParamValue::Double(2.5e20).ToNameText() == "2.5e20");
  CHECK(ParamValue::Double(0.1).ToNameText() == "0.1");
  CHECK(ParamValue::Double(1.0 / 3).ToNameText() == "0.3333333333333333");
  CHECK(ParamValue::Int(-1).ToNameText() == "-1");
  CHECK(ParamValue::String("2:4").ToNameText() == "2of4");
  CHECK(ParamValue::String("16:32").ToNameText() == "16of32");
  CHECK(ParamValue::String("a:b").ToNameText() == "a:b");  // refused later as a name character
  CHECK(ParamValue::List({ParamValue::Int(1), ParamValue::Int(2)}).ToNameText() == "1_2");
}

TEST_CASE("sweep: duplicate run names are listed with where each came from", "[recipes]") {
  std::string w = Where();
  CHECK_THROWS_WITH(X("name: s\nruns:\n  - recipe: rtn-w4g128\ngrids:\n  - method: rtn\n    name: 'rtn-w{bits}g128'\n"
                      "    params: {bits: [3, 4]}\n"),
                    w +
                        ": duplicate run names (every run needs its own name: rename runs entries, or put the varying "
                        "params into the grid's name template): 'rtn-w4g128' from runs entry at " +
                        w + ":3 and grid at " + w + ":5 (bits=4)");
  CHECK_THROWS_WITH(X("name: s\ngrids:\n  - method: m\n    name: 'm-{a}'\n    params: {a: [1, 2], b: [x, y]}\n"),
                    Contains("'m-1' from grid at " + w + ":3 (a=1, b='x') and grid at " + w +
                             ":3 (a=1, b='y'); "
                             "'m-2' from grid at " +
                             w + ":3 (a=2, b='x') and grid at " + w + ":3 (a=2, b='y')"));
  CHECK_THROWS_WITH(X("name: s\ngrids:\n  - method: m\n    name: 'm-{v}'\n    params: {v: [4, 4.0]}\n"),
                    Contains("'m-4' from grid at " + w + ":3 (v=4) and grid at " + w + ":3 (v=4.0)"));
  CHECK_THROWS_WITH(X("name: s\nruns:\n  - recipe: rtn-w4g128\n  - recipe: rtn-w4g128\n"),
                    Contains("'rtn-w4g128' from runs entry at " + w + ":3 and runs entry at " + w + ":4"));
}

TEST_CASE("sweep: zero runs, template errors, bad names and unresolvable recipes", "[recipes]") {
  std::string w = Where();
  CHECK_THROWS_WITH(X("name: s\ngrids:\n  - method: m\n    params: {bits: [], g: [1]}\n"),
                    w + ":4: grid axis 'bits' is an empty list, so the grid at " + w + ":3 expands to zero runs");
  CHECK_THROWS_WITH(X("name: s\n"), w + ":1: the sweep defines no runs (give 'runs' or 'grids')");
  CHECK_THROWS_WITH(X("name: s\nruns: []\ngrids:\n"), w + ":1: the sweep defines no runs (give 'runs' or 'grids')");
  CHECK_THROWS_WITH(X("name: s\ngrids:\n  - method: m\n    name: 'm-{bitz}'\n    params: {bits: [3, 4]}\n"),
                    w + ":4: name template 'm-{bitz}' names 'bitz', which is not a param of this grid (params: bits)");
  CHECK_THROWS_WITH(X("name: s\ngrids:\n  - method: m\n    name: 'm-{bits'\n    params: {bits: [3]}\n"),
                    w + ":4: name template 'm-{bits' has an unclosed '{' at offset 2");
  CHECK_THROWS_WITH(X("name: s\ngrids:\n  - method: m\n    name: 'm-}'\n    params: {bits: [3]}\n"),
                    w + ":4: name template 'm-}' has a '}' without a '{' at offset 2");
  CHECK_THROWS_WITH(X("name: s\ngrids:\n  - method: m\n    name: 'm-{}'\n    params: {bits: [3]}\n"),
                    w + ":4: name template 'm-{}' has an empty '{}' at offset 2; write {param}");
  CHECK_THROWS_WITH(X("name: s\ngrids:\n  - method: m\n    name: 'm-{f}'\n    params: {f: ['a b', c]}\n"),
                    w + ":4: run name (grid at " + w +
                        ":3 (f='a b')) 'm-a b' must start with a letter or digit, use "
                        "only letters, digits, '.', '_' and '-', and have at most 128 characters");
  CHECK_THROWS_WITH(X("name: s\ngrids:\n  - method: m\n    name: 'm-{f}'\n    params: {f: ['x:y']}\n"),
                    StartsWith(w + ":4: run name (grid at " + w + ":3 (f='x:y')) 'm-x:y' must start"));
  CHECK_THROWS_WITH(X("name: s\nruns:\n  - recipe: nope\n"),
                    w + ":3: recipe 'nope' is neither an existing file (relative to '" + DataDir() +
                        "/sweeps') nor a shipped recipe in '" + DataDir() +
                        "' (shipped: awq-w4g128, rtn-w4g128, wanda-2of4)");
  CHECK_THROWS_WITH(X("name: s\ngrids:\n  - recipe: nope\n    params: {bits: [3]}\n"),
                    StartsWith(w + ":3: recipe 'nope' is neither an existing file"));
  CHECK_THROWS_WITH(X("name: s\nruns:\n  - recipe: rtn-w4g128\n    name: 'a/b'\n"),
                    StartsWith(w + ":4: run name 'a/b' must start"));
}

TEST_CASE("sweep: schema errors name file:line and what was expected", "[recipes]") {
  std::string w = Where();
  CHECK_THROWS_WITH(S(""), w + ": the file is empty; a sweep is a mapping with 'name' and 'runs' and/or 'grids'");
  CHECK_THROWS_WITH(S("[1]\n"), w + ":1:1: a sweep must be a mapping (key: value lines), got a list");
  CHECK_THROWS_WITH(S("runs: []\n"), w + ":1: the sweep is missing required key 'name'");
  CHECK_THROWS_WITH(S("name: s\ngrid: []\n"), w + ":2: unknown key 'grid' in a sweep (did you mean 'grids'? allowed "
                                                  "keys: name, description, recipes_dir, runs, grids, primary)");
  CHECK_THROWS_WITH(S("name: s\nruns:\n  - recipes: x\n"),
                    Contains(w + ":3: unknown key 'recipes' in a runs entry (did you mean 'recipe'?"));
  CHECK_THROWS_WITH(S("name: s\nruns:\n  - name: x\n"), w + ":3: a runs entry is missing required key 'recipe'");
  CHECK_THROWS_WITH(S("name: s\nruns: {recipe: x}\n"), w + ":2:7: 'runs' must be a list, got a mapping");
  CHECK_THROWS_WITH(S("name: s\ngrids:\n  - method: m\n    parms: {}\n"),
                    Contains(w + ":4: unknown key 'parms' in a grid (did you mean 'params'?"));
  CHECK_THROWS_WITH(S("name: s\ngrids:\n  - params: {a: [1]}\n"),
                    StartsWith(w + ":3: the grid at " + w + ":3 must set exactly one of 'method'"));
  CHECK_THROWS_WITH(S("name: s\ngrids:\n  - method: m\n    recipe: r\n"), StartsWith(w + ":3: the grid at "));
  CHECK_THROWS_WITH(S("name: s\ngrids:\n  - method: m\n    params: {a: [1, 2, 1]}\n"),
                    w + ":4: grid axis 'a' lists 1 twice (first at line 4)");
  CHECK_THROWS_WITH(S("name: s\ngrids:\n  - method: m\n    params: {a: [{x: 1}]}\n"),
                    w + ":4: 'a' must be a value or a list of values, got a mapping");
  CHECK_THROWS_WITH(S("name: s\ngrids:\n  - method: m\n    params: {a: [1]}\n    calibration: {samples: 0}\n"),
                    w + ":5: calibration 'samples' must be between 1 and 1000000, got 0");
  CHECK_THROWS_WITH(S("name: s\nrecipes_dir: nowhere\nruns: [{recipe: x}]\n"),
                    w + ":2: recipes_dir 'nowhere' is not a folder (looked at '" + DataDir() + "/sweeps/nowhere')");
  CHECK_THROWS_WITH(S("name: s\nruns:\n  - recipe: x\n    params: {bits: [[1]]}\n"),
                    w + ":4: 'bits' must be a list of plain values, got a list inside the list");
}

TEST_CASE("sweep: list-valued params and grids too large to run", "[recipes]") {
  // A list of lists is an axis whose points are lists.
  auto runs = X("name: s\ngrids:\n  - method: m\n    name: 'm-{layers}'\n    params: {layers: [[0, 1], [2]]}\n");
  CHECK(Names(runs) == Names_t{"m-0_1", "m-2"});
  CHECK(runs[0].recipe.params.at("layers").is_list());
  // 10 axes of 4 values = 1048576 runs: refused before expanding, quickly.
  std::string axes;
  for (char c = 'a'; c < 'k'; ++c) axes += std::string("      ") + c + ": [1, 2, 3, 4]\n";
  auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH(X("name: s\ngrids:\n  - method: m\n    params:\n" + axes),
                    Where() + ":3: the grid expands to more than 10000 runs");
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 1.0);
}

TEST_CASE("sweep: primary comparisons are declared as [perp, iso] pairs", "[recipes]") {
  pc::recipes::SweepSpec s = S(
      "name: p\nprimary:\n  - [perp.ratio.block_output.accumulated.mean, iso.ratio.block_output.accumulated.mean]\n"
      "runs:\n  - recipe: rtn-w4g128\n");
  REQUIRE(s.primary.size() == 1);
  CHECK(s.primary[0].first == "perp.ratio.block_output.accumulated.mean");
  CHECK(s.primary[0].second == "iso.ratio.block_output.accumulated.mean");
  CHECK(S("name: p\nruns:\n  - recipe: rtn-w4g128\n").primary.empty());
  CHECK_THROWS_WITH(S("name: p\nprimary:\n  - [a, b, c]\nruns:\n  - recipe: rtn-w4g128\n"),
                    Contains("an entry of 'primary' is [perp predictor, iso predictor], got 3 names"));
}
