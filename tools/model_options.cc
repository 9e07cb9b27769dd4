#include "tools/model_options.h"

namespace pc::cli {

void AddModelOptions(po::options_description& desc, pipeline::ModelOptions& opts, bool required) {
  auto* model = po::value<std::string>(&opts.model);
  if (required) model->required();
  desc.add_options()
    ("model", model, "Hugging Face model folder (config.json, *.safetensors, tokenizer)")
    ("dtype", po::value<std::string>(&opts.dtype)->default_value("f32"), "weights' dtype: f32 | bf16 (bf16 is computed in f32 on a CPU without native bf16)");
}

}  // namespace pc::cli
