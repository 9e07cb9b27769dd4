// Fuzz target: recipe YAML parsing, validation and the canonical form.
#include <cstddef>
#include <cstdint>
#include <string>

#include "recipes/recipe_spec.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  pc::fuzz::ExpectOnlyPcErrors([&] {
    auto r = pc::recipes::ParseRecipeText(text, "fuzz.yaml");
    std::string canonical = pc::recipes::RecipeToYaml(r);
    // The canonical form parses back to itself.
    if (pc::recipes::RecipeToYaml(pc::recipes::ParseRecipeText(canonical, "canonical.yaml")) != canonical) __builtin_trap();
    pc::recipes::ResolveModule(r, "model.layers.0.self_attn.q_proj");
  });
  return 0;
}
