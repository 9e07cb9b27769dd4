// tools/model_options.h — the model options shared by verbs that run a model; the model is
// loaded by pipeline/run_io.h.
#pragma once

#include "pipeline/run_io.h"
#include "tools/cli.h"

namespace pc::cli {

// --model DIR (required unless `required` is false), --dtype.
void AddModelOptions(po::options_description& desc, pipeline::ModelOptions& opts, bool required = true);

}  // namespace pc::cli
