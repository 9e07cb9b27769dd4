// recipes/plan.h — a parsed recipe resolved against a model and the method registry into a
// per-linear plan (which method with which parameters, or why a linear is skipped), and the
// calibration settings it implies.
#pragma once

#include <optional>
#include <string>

#include "calibration/calib_set.h"
#include "compress/engine.h"
#include "compress/method.h"
#include "recipes/recipe_spec.h"

namespace pc::recipes {

struct ResolvedRecipe {
  Plan plan;
  CalibSpec calib;     // the recipe's calibration defaults (source left empty)
  std::optional<Located<std::string>> calib_text;  // the recipe's `calibration: text:` (unset: --calib)
  std::string method;  // the recipe's main method
  std::string family;  // its family ("quantization", "pruning")
};

// Every block linear of `model` (blocks need not be loaded). Errors name the recipe file:line:
// unknown method (listing the registered ones), unknown or ill-typed parameters, an override that
// matches no linear.
ResolvedRecipe ResolvePlan(const RecipeSpec& recipe, const Model& model, const MethodRegistry& registry);

// The plan as text: one line per linear (method and parameters, or the skip reason), then the head.
std::string FormatPlan(const ResolvedRecipe& resolved, const Model& model);

// Converts a recipe parameter to a method parameter value (lists are refused: a recipe's
// parameter is a scalar; grids are sweep files' business).
ParamScalar ToScalar(const ParamValue& v, const std::string& what);

}  // namespace pc::recipes
