// The shipped pruning / SparseGPT / GPTQ recipes resolve against a model, and recipe errors of
// these methods name the recipe line.
#include <catch2/catch.hpp>

#include "core/fs.h"
#include "model/model.h"
#include "pipeline/compress_run.h"
#include "recipes/plan.h"
#include "recipes/recipe_spec.h"
#include "tests/model/model_test_util.h"
#include "tests/test_support.h"

using Catch::Matchers::Contains;

namespace {
const char* const kRecipes[] = {"wanda-30",       "wanda-50",        "wanda-70",     "wanda-2of4",     "wanda-4of8",
                                "wanda-perp-50",  "wanda-perp-2of4", "magnitude-50", "magnitude-2of4", "sparsegpt-50",
                                "sparsegpt-2of4", "sparsegpt-50-w4", "gptq-w4g128",  "gptq-w3g128"};
}

TEST_CASE("prune recipes: every shipped recipe resolves into a plan", "[compress][prune]") {
  PC_SKIP_IF(!pc::test::HavePythonTorch(), "/usr/bin/python3 with torch is absent");
  auto model = pc::Model::Load(pc::test::MakeReferenceModel("llama"));
  for (const char* name : kRecipes) {
    INFO(name);
    pc::recipes::RecipeSpec r = pc::pipeline::LoadRecipe(name);
    pc::recipes::ResolvedRecipe rr = pc::recipes::ResolvePlan(r, *model, pc::MethodRegistry::Builtins());
    CHECK(rr.plan.Compressed() == model->num_layers() * 7);
    CHECK(rr.plan.propagate_compressed);
    CHECK(rr.calib.windowing == pc::Windowing::kRandom);
    CHECK(rr.plan.methods.size() == 1);
  }
}

TEST_CASE("prune recipes: bad parameters name the recipe line", "[compress][prune]") {
  PC_SKIP_IF(!pc::test::HavePythonTorch(), "/usr/bin/python3 with torch is absent");
  auto model = pc::Model::Load(pc::test::MakeReferenceModel("llama"));
  auto resolve = [&](const std::string& yaml) {
    return pc::recipes::ResolvePlan(pc::recipes::ParseRecipeText(yaml, "r.yaml"), *model,
                                    pc::MethodRegistry::Builtins());
  };
  CHECK_THROWS_WITH(resolve("name: x\nmethod: wanda\nparams:\n  sparsity: 1.0\n"),
                    Contains("r.yaml:2: 'sparsity' = 1 must lie in [0, 1)"));
  CHECK_THROWS_WITH(resolve("name: x\nmethod: wanda\nparams:\n  sparsity: 1.2\n"),
                    Contains("r.yaml:4: 'sparsity' = 1.2 is out of range (0..1)"));
  CHECK_THROWS_WITH(resolve("name: x\nmethod: wanda\nparams:\n  pattern: '2:x'\n"),
                    Contains("r.yaml:2: 'pattern' = '2:x' is not understood"));
  CHECK_THROWS_WITH(resolve("name: x\nmethod: sparsegpt\nparams:\n  pattern: '4:4'\n"),
                    Contains("r.yaml:2: 'pattern' = '4:4' needs 1 <= N < M"));
  CHECK_THROWS_WITH(resolve("name: x\nmethod: wanda\nparams:\n  pattern: '1:4'\n"),
                    Contains("prunes N/M = 0.25 of the weights but 'sparsity' = 0.5"));
  CHECK_THROWS_WITH(resolve("name: x\nmethod: magnitude\nparams:\n  scope: layer\n  pattern: '2:4'\n"),
                    Contains("r.yaml:2: scope 'layer' ranks all weights of a layer together"));
  CHECK_THROWS_WITH(resolve("name: x\nmethod: gptq\nparams:\n  group_size: -1\n  static_groups: true\n"),
                    Contains("r.yaml:2: 'static_groups: true' needs groups"));
  // An override with another pattern is checked at its own line.
  CHECK_THROWS_WITH(resolve("name: x\nmethod: wanda\noverrides:\n  - match: 'mlp'\n    params: {pattern: '3:2'}\n"),
                    Contains("'pattern' = '3:2' needs 1 <= N < M"));
}

// An ignore pattern that matches no linear is an error, as an unmatched override is; the output
// head is a plan entry, so ignoring it is accepted (tests/compress/head_test.cc). Every shipped
// recipe resolves.
TEST_CASE("recipes: an ignore pattern that matches no linear is an error", "[compress][prune]") {
  PC_SKIP_IF(!pc::test::HavePythonTorch(), "/usr/bin/python3 with torch is absent");
  auto model = pc::Model::Load(pc::test::MakeReferenceModel("llama"));
  auto resolve = [&](const std::string& yaml) {
    return pc::recipes::ResolvePlan(pc::recipes::ParseRecipeText(yaml, "r.yaml"), *model,
                                    pc::MethodRegistry::Builtins());
  };
  CHECK(resolve("name: x\nmethod: rtn\nignore:\n  - '^lm_head$'\n").plan.Compressed() == model->num_layers() * 7);
  CHECK_THROWS_WITH(resolve("name: x\nmethod: rtn\nignore:\n  - '^embed_out$'\n"),
                    Contains("r.yaml:4: ignore pattern '^embed_out$' matches no linear of this llama model") &&
                        Contains("the output head is 'lm_head'"));
  CHECK_THROWS_WITH(resolve("name: x\nmethod: rtn\nignore:\n  - 'mlp.down_proj'\n  - 'mpl\\.up'\n"),
                    Contains("ignore pattern 'mpl\\.up' matches no linear"));
  pc::recipes::ResolvedRecipe ok = resolve("name: x\nmethod: rtn\nignore:\n  - 'mlp.down_proj'\n");
  CHECK(ok.plan.Compressed() == model->num_layers() * 6);
  for (const std::string& name : pc::recipes::ListShippedRecipes(pc::pipeline::ShippedRecipesDir())) {
    INFO(name);
    CHECK_NOTHROW(pc::recipes::ResolvePlan(pc::pipeline::LoadRecipe(name), *model, pc::MethodRegistry::Builtins()));
  }
}
