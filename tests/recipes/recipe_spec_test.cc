#include "recipes/recipe_spec.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>

#include "core/error.h"
#include "tests/test_support.h"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using pc::recipes::ParamValue;
using pc::recipes::RecipeSpec;

namespace {

std::string DataDir() { return pc::test::SourceDir() + "/tests/recipes/data"; }

RecipeSpec R(const std::string& text) { return pc::recipes::ParseRecipeText(text, "r.yaml"); }

// A minimal valid recipe with `extra` appended.
RecipeSpec Min(const std::string& extra) { return R("name: x\nmethod: awq\n" + extra); }

void WriteFile(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

}  // namespace

TEST_CASE("recipe: the example file parses with every value's line", "[recipes]") {
  std::string path = DataDir() + "/awq-w4g128.yaml";
  RecipeSpec r = pc::recipes::ParseRecipeFile(path);
  CHECK(r.name.value == "awq-w4g128");
  CHECK(r.description == "AWQ 4-bit, group 128, llm-awq defaults");
  CHECK(r.method.value == "awq");
  CHECK(r.method.loc.Str() == path + ":4");
  REQUIRE(r.params.size() == 4);
  CHECK(r.params.at("bits").AsInt("'bits'") == 4);
  CHECK(r.params.at("bits").loc().line == 6);
  CHECK(r.params.at("group_size").AsInt("'group_size'") == 128);
  CHECK(r.params.at("zero_point").AsBool("'zero_point'"));
  CHECK_FALSE(r.params.at("duo_scaling").AsBool("'duo_scaling'"));
  CHECK(r.calibration.samples->value == 128);
  CHECK(r.calibration.samples->loc.line == 11);
  CHECK(r.calibration.seq_len->value == 512);
  CHECK(r.calibration.windowing->value == pc::recipes::Windowing::kAwq);
  CHECK(r.calibration.seed->value == 0);
  CHECK(r.calibration.text_field->value == "text");
  CHECK(r.propagate->value == pc::recipes::Propagate::kOriginal);
  REQUIRE(r.ignore.size() == 1);
  CHECK(r.ignore[0].pattern() == "lm_head");
  CHECK(r.ignore[0].loc().line == 18);
  REQUIRE(r.overrides.size() == 3);
  CHECK(r.overrides[0].loc.line == 20);
  CHECK(r.overrides[0].Describe() == "override at " + path + ":20 ('model\\.layers\\.0\\..*')");
  CHECK(r.overrides[0].params.at("bits").AsInt("'bits'") == 8);
  CHECK(r.overrides[1].method->value == "rtn");
  CHECK(r.overrides[1].method->loc.line == 23);
  CHECK(r.overrides[1].params.at("group_size").AsInt("'group_size'") == -1);
  CHECK(r.overrides[2].skip->value == "keep MLP dense");
}

TEST_CASE("recipe: canonical YAML round-trips through the parser", "[recipes]") {
  RecipeSpec r = pc::recipes::ParseRecipeFile(DataDir() + "/awq-w4g128.yaml");
  std::string yaml = pc::recipes::RecipeToYaml(r);
  CHECK(yaml ==
        "name: awq-w4g128\n"
        "description: 'AWQ 4-bit, group 128, llm-awq defaults'\n"
        "method: awq\n"
        "params:\n"
        "  bits: 4\n"
        "  duo_scaling: false\n"
        "  group_size: 128\n"
        "  zero_point: true\n"
        "calibration:\n"
        "  samples: 128\n"
        "  seq_len: 512\n"
        "  windowing: awq\n"
        "  seed: 0\n"
        "  text_field: 'text'\n"
        "propagate: original\n"
        "ignore:\n"
        "  - 'lm_head'\n"
        "overrides:\n"
        "  - match: 'model\\.layers\\.0\\..*'\n"
        "    params:\n"
        "      bits: 8\n"
        "  - match: '.*down_proj'\n"
        "    method: rtn\n"
        "    params:\n"
        "      bits: 8\n"
        "      group_size: -1\n"
        "  - match: '.*\\.mlp\\..*'\n"
        "    skip: 'keep MLP dense'\n");
  RecipeSpec back = R(yaml);
  CHECK(pc::recipes::RecipeToYaml(back) == yaml);
  CHECK(back.params == r.params);
  CHECK(back.overrides[1].params == r.overrides[1].params);

  // Every value type survives, including strings that look like numbers and awkward text.
  RecipeSpec odd =
      R("name: \"null\"\nmethod: m\ndescription: \"tab\\there, 'quotes' \\\"and\\\" \\\\ # : -\"\n"
        "params:\n  a: 0.1\n  b: 4.0\n  c: 1e-5\n  d: '4'\n  e: [1, 2.5, x, 'true', false]\n"
        "  f: \"2:4\"\n  g: -0.0\n  h: 123456789012345\n  i: 1e300\n  j: []\n  k: yes\n");
  std::string odd_yaml = pc::recipes::RecipeToYaml(odd);
  RecipeSpec odd_back = R(odd_yaml);
  CHECK(odd_back.name.value == "null");
  CHECK(odd_back.description == odd.description);
  CHECK(odd_back.params == odd.params);
  CHECK(pc::recipes::RecipeToYaml(odd_back) == odd_yaml);
  CHECK(odd.params.at("a").ToYaml() == "0.1");
  CHECK(odd.params.at("b").ToYaml() == "4.0");
  CHECK(odd.params.at("b").type() == ParamValue::Type::kDouble);
  CHECK(odd.params.at("c").ToYaml() == "1e-05");
  CHECK(odd.params.at("d").type() == ParamValue::Type::kString);
  CHECK(odd.params.at("e").ToYaml() == "[1, 2.5, 'x', 'true', false]");
  CHECK(odd.params.at("k").AsString("'k'") == "yes");

  // The calibration text (a name or self:N) is written after the other calibration keys.
  RecipeSpec texts = R("name: n\nmethod: m\ncalibration: {text: wiki-train, samples: 32}\n");
  CHECK(pc::recipes::RecipeToYaml(texts) ==
        "name: n\nmethod: m\ncalibration:\n  samples: 32\n  text: 'wiki-train'\n");
  CHECK(R(pc::recipes::RecipeToYaml(texts)).calibration.text->value == "wiki-train");
  CHECK(R("name: n\nmethod: m\ncalibration: {text: 'self:64'}\n").calibration.text->value == "self:64");

  // Layout, comments, key order and quoting do not change the canonical text.
  RecipeSpec a = R("name: n\nmethod: m\nparams: {b: 2, a: 1}\nignore: [\"x\"]\n");
  RecipeSpec b = R("# same recipe\nignore:\n  - x\nparams:\n  a: 1   # one\n  b: 2\nmethod: 'm'\nname: n\n");
  CHECK(pc::recipes::RecipeToYaml(a) == pc::recipes::RecipeToYaml(b));
}

TEST_CASE("recipe: missing, unknown and mistyped keys name file:line and what was expected", "[recipes]") {
  CHECK_THROWS_WITH(R(""), "r.yaml: the file is empty; a recipe is a mapping with at least 'name' and 'method'");
  CHECK_THROWS_WITH(R("# nothing\n"), StartsWith("r.yaml: the file is empty"));
  CHECK_THROWS_WITH(R("- a\n- b\n"), "r.yaml:1:1: a recipe must be a mapping (key: value lines), got a list");
  CHECK_THROWS_WITH(R("just text\n"), "r.yaml:1:1: a recipe must be a mapping (key: value lines), got 'just text'");
  CHECK_THROWS_WITH(R("name: x\n"), "r.yaml:1: the recipe is missing required key 'method'");
  CHECK_THROWS_WITH(R("method: awq\n"), "r.yaml:1: the recipe is missing required key 'name'");
  CHECK_THROWS_WITH(R("name: x\nmetod: awq\n"),
                    "r.yaml:2: unknown key 'metod' in a recipe (did you mean 'method'? allowed keys: name, "
                    "description, method, params, calibration, propagate, ignore, overrides)");
  CHECK_THROWS_WITH(Min("calibration:\n  sample: 4\n"),
                    Contains("r.yaml:4: unknown key 'sample' in calibration (did you mean 'samples'?") &&
                        Contains("allowed keys: samples, seq_len, windowing, seed, text_field, text"));
  CHECK_THROWS_WITH(Min("overrides:\n  - match: x\n    parms: {bits: 8}\n"),
                    Contains("r.yaml:5: unknown key 'parms' in an override (did you mean 'params'?") &&
                        Contains("allowed keys: match, method, params, skip"));
  CHECK_THROWS_WITH(Min("calibration:\n  samples: four\n"),
                    "r.yaml:4: calibration 'samples' must be an integer, got 'four'");
  CHECK_THROWS_WITH(Min("calibration:\n  text: self:0\n"),
                    "r.yaml:4: calibration 'text' 'self:0' must be self:N with N a positive number of windows "
                    "(at most 9999999)");
  CHECK_THROWS_WITH(Min("calibration:\n  text: self:x\n"), Contains("r.yaml:4: calibration 'text' 'self:x' must be"));
  CHECK_THROWS_WITH(Min("calibration:\n  text: 'c4 sample'\n"),
                    Contains("r.yaml:4: calibration 'text' 'c4 sample' must be self:N or the name of a text given as "
                             "--calib-text NAME=FILE"));
  CHECK_THROWS_WITH(Min("calibration: [1]\n"),
                    "r.yaml:3:14: calibration must be a mapping (key: value lines), got a list");
  CHECK_THROWS_WITH(Min("params: [1, 2]\n"), "r.yaml:3:9: 'params' must be a mapping (key: value lines), got a list");
  CHECK_THROWS_WITH(Min("params:\n  bits: {a: 1}\n"),
                    "r.yaml:4: 'bits' must be a value or a list of values, got a mapping");
  CHECK_THROWS_WITH(Min("params:\n  bits:\n"),
                    "r.yaml:4: 'bits' has an empty value (write a value, or remove the key)");
  CHECK_THROWS_WITH(Min("params:\n  bits: [[1]]\n"),
                    "r.yaml:4: 'bits' must be a list of plain values, got a list inside the list");
  CHECK_THROWS_WITH(Min("params:\n  2bits: 4\n"),
                    "r.yaml:4: parameter name '2bits' in 'params' must be an identifier ([A-Za-z_][A-Za-z0-9_]*)");
  CHECK_THROWS_WITH(Min("ignore: lm_head\n"), "r.yaml:3:9: 'ignore' must be a list, got 'lm_head'");
  CHECK_THROWS_WITH(Min("ignore: [{a: 1}]\n"), "r.yaml:3: 'ignore' entries must be regexes (strings), got a mapping");
  CHECK_THROWS_WITH(Min("overrides: {match: x}\n"), "r.yaml:3:12: 'overrides' must be a list, got a mapping");
  CHECK_THROWS_WITH(Min("overrides:\n  - params: {bits: 8}\n"),
                    "r.yaml:4: an override is missing required key 'match'");
  CHECK_THROWS_WITH(R("name: x\nmethod: [awq]\n"), "r.yaml:2: 'method' must be a string, got a list");
  CHECK_THROWS_WITH(R("name: x\nmethod:\n"), "r.yaml:2: 'method' must be a string, got an empty value");
  CHECK_THROWS_WITH(R("name: x\nmethod: awq\nname: y\n"), "r.yaml:3:1: duplicate key 'name' (first at line 1)");
  CHECK_THROWS_WITH(R("name: x\nmethod: awq\nparams: {bits: 4,\n"), Contains("r.yaml:4:1: did not find expected"));
}

TEST_CASE("recipe: out-of-range values list what is allowed", "[recipes]") {
  CHECK_THROWS_WITH(Min("calibration: {samples: 0}\n"),
                    "r.yaml:3: calibration 'samples' must be between 1 and 1000000, got 0");
  CHECK_THROWS_WITH(Min("calibration: {seq_len: -5}\n"),
                    "r.yaml:3: calibration 'seq_len' must be between 1 and 1048576, got -5");
  CHECK_THROWS_WITH(Min("calibration: {seed: -1}\n"), "r.yaml:3: calibration 'seed' must be at least 0, got -1");
  CHECK_THROWS_WITH(Min("calibration:\n  windowing: wanda\n"),
                    "r.yaml:4: calibration 'windowing' must be one of awq, random, got 'wanda'");
  CHECK_THROWS_WITH(Min("calibration: {text_field: ''}\n"), "r.yaml:3: calibration 'text_field' must not be empty");
  CHECK_THROWS_WITH(Min("propagate: quantized\n"),
                    "r.yaml:3: 'propagate' must be one of original, compressed, got 'quantized'");
  CHECK_THROWS_WITH(Min("propagate: [original]\n"),
                    "r.yaml:3: 'propagate' must be one of original, compressed, got a list");
  CHECK_THROWS_WITH(R("name: awq w4\nmethod: awq\n"),
                    "r.yaml:1: recipe name 'awq w4' must start with a letter or digit, use only letters, digits, '.', "
                    "'_' and '-', and have at most 128 characters");
  CHECK_THROWS_WITH(R("name: .hidden\nmethod: awq\n"), StartsWith("r.yaml:1: recipe name '.hidden' must start"));
  CHECK_THROWS_WITH(R("name: x\nmethod: a/b\n"), StartsWith("r.yaml:2: method name 'a/b' must start"));
  CHECK_THROWS_WITH(R("name: " + std::string(129, 'a') + "\nmethod: awq\n"), Contains("at most 128 characters"));
  CHECK_THROWS_WITH(Min("overrides:\n  - match: x\n    skip: true\n"),
                    "r.yaml:5: 'skip' must be a reason (a string, e.g. skip: \"keep MLP dense\"), got 'true'");
  CHECK_THROWS_WITH(Min("overrides:\n  - match: x\n    skip: dense\n    params: {bits: 8}\n"),
                    "r.yaml:4: override at r.yaml:4 sets 'skip' together with 'method' or 'params'; a skipped linear "
                    "is left as it is");
  CHECK_THROWS_WITH(Min("overrides:\n  - match: x\n"),
                    "r.yaml:4: override at r.yaml:4 does nothing; give it 'params', 'method' or 'skip'");
  CHECK_NOTHROW(Min("overrides:\n  - match: x\n    skip: 'true'\n"));  // a quoted reason is a reason
}

TEST_CASE("recipe: regexes compile at parse time, search semantics, hostile patterns bounded", "[recipes]") {
  CHECK_THROWS_WITH(Min("ignore:\n  - 'lm_head'\n  - 'layers\\.(0'\n"),
                    "r.yaml:5: invalid regex 'layers\\.(0' in 'ignore': missing closing parenthesis at offset 10");
  CHECK_THROWS_WITH(Min("overrides:\n  - match: '*down'\n    params: {bits: 8}\n"),
                    StartsWith("r.yaml:4: invalid regex '*down' in 'match' of override at r.yaml:4: quantifier does "
                               "not follow a repeatable item at offset 0"));
  CHECK_THROWS_WITH(Min("ignore: ['']\n"), "r.yaml:3: empty regex in 'ignore' (it would match every module)");
  CHECK_THROWS_WITH(Min("ignore: ['" + std::string(5000, 'a') + "']\n"),
                    "r.yaml:3: regex in 'ignore' is 5000 bytes long, more than 4096");
  RecipeSpec r = Min("ignore: ['lm_head', '^model\\.layers\\.1\\.']\n");
  CHECK(r.ignore[0].Matches("lm_head"));
  CHECK(r.ignore[0].Matches("model.lm_head.x"));  // found anywhere in the name
  CHECK_FALSE(r.ignore[0].Matches("model.embed_tokens"));
  CHECK(r.ignore[1].Matches("model.layers.1.mlp.up_proj"));
  CHECK_FALSE(r.ignore[1].Matches("model.layers.11.mlp.up_proj"));
  CHECK_FALSE(r.ignore[1].Matches("x.model.layers.1.mlp"));
  // Catastrophic backtracking stops at the match limit with an error naming the pattern's line.
  RecipeSpec evil = Min("ignore:\n  - '^(a+)+$'\n");
  auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH(evil.ignore[0].Matches(std::string(40, 'a') + "!"),
                    "r.yaml:4: regex '^(a+)+$' failed on '" + std::string(40, 'a') +
                        "!': match limit exceeded (simplify the pattern)");
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 2.0);
}

TEST_CASE("recipe: params convert to the registry's types with file:line errors", "[recipes]") {
  RecipeSpec r = Min("params:\n  bits: four\n  ratio: 0.5\n  n: 3\n  flag: true\n  list: [1, 2]\n  q: '8'\n");
  CHECK_THROWS_WITH(r.params.at("bits").AsInt("'bits'"), "r.yaml:4: 'bits' must be an integer, got 'four'");
  CHECK_THROWS_WITH(r.params.at("ratio").AsInt("'ratio'"), "r.yaml:5: 'ratio' must be an integer, got '0.5'");
  CHECK(r.params.at("n").AsDouble("'n'") == 3.0);
  CHECK_THROWS_WITH(r.params.at("flag").AsDouble("'flag'"), "r.yaml:7: 'flag' must be a number, got 'true'");
  CHECK_THROWS_WITH(r.params.at("n").AsBool("'n'"), "r.yaml:6: 'n' must be true or false, got '3'");
  CHECK_THROWS_WITH(r.params.at("list").AsInt("'list'"), "r.yaml:8: 'list' must be an integer, got the list [1, 2]");
  CHECK(r.params.at("list").AsList("'list'")[1].AsInt("'list'") == 2);
  CHECK(r.params.at("list").AsList("'list'")[1].loc().StrWithColumn() == "r.yaml:8:13");
  CHECK_THROWS_WITH(r.params.at("q").AsInt("'q'"), "r.yaml:9: 'q' must be an integer, got the quoted string '8'");
  CHECK(r.params.at("q").AsString("'q'") == "8");
  CHECK(r.params.at("ratio").AsString("'ratio'") == "0.5");
  CHECK_THROWS_WITH(r.params.at("n").AsList("'n'"), "r.yaml:6: 'n' must be a list, got '3'");
}

TEST_CASE("recipe: a module's step: ignore first, then the first matching override", "[recipes]") {
  RecipeSpec r = pc::recipes::ParseRecipeFile(DataDir() + "/awq-w4g128.yaml");
  auto head = pc::recipes::ResolveModule(r, "lm_head");
  CHECK(head.skip);
  CHECK(head.skip_reason == "matches ignore pattern 'lm_head'");
  CHECK(head.ignore_index == 0);
  CHECK(head.rule_loc.line == 18);

  auto l0 = pc::recipes::ResolveModule(r, "model.layers.0.mlp.down_proj");  // first override wins over the others
  CHECK_FALSE(l0.skip);
  CHECK(l0.override_index == 0);
  CHECK(l0.method == "awq");
  CHECK(pc::recipes::FormatParams(l0.params) == "bits=8, duo_scaling=false, group_size=128, zero_point=true");

  auto down = pc::recipes::ResolveModule(r, "model.layers.3.mlp.down_proj");  // another method: its own params only
  CHECK(down.override_index == 1);
  CHECK(down.method == "rtn");
  CHECK(down.method_loc.line == 23);
  CHECK(pc::recipes::FormatParams(down.params) == "bits=8, group_size=-1");

  auto up = pc::recipes::ResolveModule(r, "model.layers.3.mlp.up_proj");
  CHECK(up.skip);
  CHECK(up.skip_reason == "keep MLP dense");
  CHECK(up.override_index == 2);
  CHECK(up.rule_loc.line == 25);

  auto q = pc::recipes::ResolveModule(r, "model.layers.3.self_attn.q_proj");
  CHECK_FALSE(q.skip);
  CHECK(q.override_index == -1);
  CHECK(q.params == r.params);
}

TEST_CASE("recipe: shipped names and paths resolve, unknown ones list the shipped recipes", "[recipes]") {
  std::string dir = DataDir();
  CHECK(pc::recipes::ResolveRecipePath("awq-w4g128", dir) == dir + "/awq-w4g128.yaml");
  CHECK(pc::recipes::ResolveRecipePath("awq-w4g128.yaml", dir) == dir + "/awq-w4g128.yaml");
  CHECK(pc::recipes::ResolveRecipePath(dir + "/rtn-w4g128.yaml", "/nonexistent") == dir + "/rtn-w4g128.yaml");
  CHECK(pc::recipes::ResolveRecipePath("data/rtn-w4g128.yaml", "/nonexistent", dir + "/..") ==
        dir + "/../data/rtn-w4g128.yaml");
  CHECK_THROWS_WITH(pc::recipes::ResolveRecipePath("awq-w9", dir),
                    "recipe 'awq-w9' is neither an existing file nor a shipped recipe in '" + dir +
                        "' (shipped: awq-w4g128, rtn-w4g128, wanda-2of4)");
  CHECK_THROWS_WITH(pc::recipes::ResolveRecipePath("x", "/nonexistent", "", "s.yaml:3"),
                    "s.yaml:3: recipe 'x' is neither an existing file nor a shipped recipe in '/nonexistent' (no "
                    "shipped recipes found there)");
  CHECK_THROWS_WITH(pc::recipes::ResolveRecipePath(dir, dir), Contains("is a folder, expected a recipe file"));
  CHECK(pc::recipes::ListShippedRecipes(dir).size() == 3);
  CHECK(pc::recipes::ListShippedRecipes("/nonexistent").empty());

  std::string tmp = pc::test::TempDir("recipe");
  WriteFile(tmp + "/bad.yaml", "name: bad\nmethod: awq\nparams:\n  bits: four\n");
  RecipeSpec bad = pc::recipes::ParseRecipeFile(tmp + "/bad.yaml");
  CHECK_THROWS_WITH(bad.params.at("bits").AsInt("'bits'"), tmp + "/bad.yaml:4: 'bits' must be an integer, got 'four'");
  CHECK_THROWS_WITH(pc::recipes::ParseRecipeFile(tmp + "/none.yaml"), Contains("none.yaml': the file does not exist"));
}
