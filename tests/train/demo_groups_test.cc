// The demo exercises group-wise quantization (issue 22, item 15): for every run of the demo sweep
// (recipes/sweeps/demo.yaml) that quantizes, on both demo models (DemoTrainOptions, as
// `perpcomp demo` trains them), every quantized linear has a group size below its input width, so
// each row has several groups (no run is per channel, explicitly or because its group is as wide
// as the row).
#include <catch2/catch.hpp>

#include <string>

#include "model/arch.h"
#include "model/config.h"
#include "model/sizes.h"
#include "recipes/recipe_spec.h"
#include "recipes/sweep_spec.h"
#include "tests/test_support.h"
#include "train/trainer.h"

TEST_CASE("demo: every quantizing demo run has several groups per row on the demo models", "[train][demo]") {
  const std::string recipes = pc::test::SourceDir() + "/recipes";
  const pc::recipes::SweepSpec sweep = pc::recipes::ParseSweepFile(recipes + "/sweeps/demo.yaml", recipes);
  const std::vector<pc::recipes::SweepRun> runs = pc::recipes::ExpandSweep(sweep);
  REQUIRE(runs.size() >= 10);
  for (const std::string arch : {"gpt_neox", "llama"}) {
    const pc::TrainOptions t = pc::DemoTrainOptions(arch, "corpus", 100);
    const pc::ModelConfig c = pc::ParseModelConfig(pc::TrainConfigJson(t, t.vocab_size, 0, 1), "demo " + arch);
    int quantized_runs = 0;
    for (const pc::recipes::SweepRun& run : runs) {
      bool quantizes = false;
      for (int layer = 0; layer < c.layers; ++layer) {
        for (const pc::LinearSpec& lin : c.arch->linears) {
          const std::string name = pc::ExpandName(lin.name.hf, layer);
          const pc::recipes::ModuleStep step = pc::recipes::ResolveModule(run.recipe, name);
          if (step.skip || step.params.count("bits") == 0 || step.params.at("bits").AsInt("bits") == 0) continue;
          quantizes = true;
          INFO(arch << " " << run.recipe.name.value << " " << name);
          REQUIRE(step.params.count("group_size") == 1);  // the demo's recipes say their group size
          const int64_t group = step.params.at("group_size").AsInt("group_size");
          const int64_t in = pc::BlockLinearDims(c, lin.role).in;
          CHECK(group > 0);  // not per channel
          CHECK(group < in);  // several groups per row
          CHECK(in % group == 0);
        }
      }
      quantized_runs += quantizes;
    }
    CHECK(quantized_runs == 9);  // rtn x3, awq x2, perp-awq x2, gptq x2
  }
}
