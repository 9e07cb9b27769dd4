#include "tools/model_options.h"

#include "core/error.h"
#include "core/fs.h"
#include "core/tensor_util.h"

namespace pc::cli {

void AddModelOptions(po::options_description& desc, ModelOptions& opts, bool required) {
  auto* model = po::value<std::string>(&opts.model);
  if (required) model->required();
  desc.add_options()
    ("model", model, "Hugging Face model folder (config.json, *.safetensors, tokenizer)")
    ("dtype", po::value<std::string>(&opts.dtype)->default_value("f32"), "compute dtype: f32 | bf16");
}

std::unique_ptr<Model> LoadModel(const ModelOptions& opts) {
  LoadOptions lo;
  lo.dtype = ParseDType(opts.dtype);
  PC_CHECK(lo.dtype != at::kHalf, "--dtype f16 is not supported for computing on this CPU (use f32 or bf16)");
  return Model::Load(opts.model, lo);
}

std::unique_ptr<Tokenizer> LoadModelTokenizer(const std::string& model_dir) {
  PC_CHECK(fs::IsDirectory(model_dir), "model folder '", model_dir, "' does not exist");
  return LoadTokenizer(model_dir);  // tokenizer.json, tokenizer.model or vocab.json + merges.txt
}

}  // namespace pc::cli
