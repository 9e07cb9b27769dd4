// pipeline/compress_run.h — one compression run end to end: recipe + model + calibration ->
// a Hugging Face folder with the compressed weights, config.json carrying the record of the
// recipe and calibration, and compress.h5 (the per-linear log). Used by `perpcomp compress`
// and by sweeps.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "calibration/calib_set.h"
#include "compress/engine.h"
#include "recipes/plan.h"
#include "recipes/recipe_spec.h"
#include "store/group.h"

namespace pc::pipeline {

// Command-line calibration settings; unset fields fall back to the recipe, then the method.
struct CalibOverrides {
  std::string source;  // file or self:N (required for a run): the text of recipes that name none
  // --calib-text NAME=FILE: the texts a recipe's `calibration: text: NAME` selects.
  std::map<std::string, std::string> texts;
  std::optional<int64_t> samples, seq_len;
  std::optional<uint64_t> seed;
  std::optional<std::string> windowing, text_field;
};

struct CompressRunOptions {
  std::string model_dir;
  std::string out_dir;
  bool overwrite = false;
  CalibOverrides calib;
  std::string format = "hf";  // "hf" | "awq-gemm" (also writes out_dir/awq-gemm) | "gguf" (out_dir/model.gguf)
  std::string gguf_outtype = "f16";  // gguf: tensors not in a block type (f32 | f16 | bf16; 1-D ones f32)
  int64_t micro_batch = 0;
  // Fault injection for the crash tests (tests/tools/crash_test.cc): SIGKILL at `point`:
  // "calibration" (staged folder made, calibration built), "block-K" (block K written),
  // "write-log" (compress.h5 half-written), "commit" (all written, not yet renamed).
  std::string crash_at;
};

struct CompressRunResult {
  nlohmann::json record;  // what config.json's perpcomp_compression holds
  CompressResult engine;
  at::Tensor calib_tokens;  // (windows, tokens) the calibration windows the engine ran on
  int compressed = 0, skipped = 0;
};

// The shipped recipes folder: $PERPCOMP_RECIPES, else the source tree's recipes/.
// The repository this binary was built from (the parent of the shipped recipes/ folder).
std::string SourceRootDir();
std::string ShippedRecipesDir();
// Parses a recipe by name or path (ResolveRecipePath over the shipped folder).
recipes::RecipeSpec LoadRecipe(const std::string& name_or_path);
// The calibration text of a run: the recipe's `calibration: text:` (self:N, or a name bound in
// over.texts), else over.source. A name not bound is an error naming the recipe file:line.
std::string CalibSourceFor(const std::optional<recipes::Located<std::string>>& text, const CalibOverrides& over);
inline std::string CalibSourceFor(const recipes::RecipeSpec& recipe, const CalibOverrides& over) {
  return CalibSourceFor(recipe.calibration.text, over);
}
// Calibration settings of a run: recipe/method defaults overridden by the command line (the
// text: CalibSourceFor).
CalibSpec MergeCalib(const recipes::ResolvedRecipe& resolved, const CalibOverrides& over, const Model& model);

CompressRunResult RunCompress(const recipes::RecipeSpec& recipe, const CompressRunOptions& options);

// Writes records of one kind as a table (scalars and texts as columns; arrays as 2-D
// datasets rows x max length, NaN-padded) under `group`/`name`.
void WriteRecords(const store::Group& group, const std::string& name, const std::vector<Record>& records);

}  // namespace pc::pipeline
