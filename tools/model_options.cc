#include "tools/model_options.h"

#include "core/error.h"
#include "core/fs.h"
#include "core/strings.h"
#include "core/tensor_util.h"

namespace pc::cli {

void AddModelOptions(po::options_description& desc, ModelOptions& opts, bool required) {
  auto* model = po::value<std::string>(&opts.model);
  if (required) model->required();
  desc.add_options()
    ("model", model, "Hugging Face model folder (config.json, *.safetensors, tokenizer)")
    ("dtype", po::value<std::string>(&opts.dtype)->default_value("f32"), "weights' dtype: f32 | bf16 (bf16 is computed in f32 on a CPU without native bf16)");
}

std::unique_ptr<Model> LoadModel(const ModelOptions& opts) {
  LoadOptions lo;
  lo.dtype = ParseDType(opts.dtype);
  PC_CHECK(lo.dtype != at::kHalf, "--dtype f16 is not supported for computing on this CPU (use f32 or bf16)");
  lo.load_blocks = opts.load_blocks;
  lo.load_head = opts.load_head;
  return Model::Load(opts.model, lo);
}

std::unique_ptr<Tokenizer> LoadModelTokenizer(const std::string& model_dir) {
  PC_CHECK(fs::IsDirectory(model_dir), "model folder '", model_dir, "' does not exist");
  return LoadTokenizer(model_dir);  // tokenizer.json, tokenizer.model or vocab.json + merges.txt
}

void CheckSameTokenizer(const std::string& model_dir, const std::string& model_name, const std::string& reference_dir,
                        const std::string& sample_text_path) {
  auto a = LoadModelTokenizer(model_dir);
  auto b = LoadModelTokenizer(reference_dir);
  const std::string differ = Str("the ", model_name, " '", model_dir, "' and the reference '", reference_dir,
                                 "' have different tokenizers");
  const std::string consequence = "; KL, delta NLL and top-1 agreement would compare different tokens";
  PC_CHECK(a->vocab_size() == b->vocab_size(), differ, " (vocabulary ", a->vocab_size(), " vs ", b->vocab_size(), ")",
           consequence);
  PC_CHECK(a->bos_id() == b->bos_id() && a->eos_id() == b->eos_id(), differ, " (BOS/EOS ids ", a->bos_id(), "/",
           a->eos_id(), " vs ", b->bos_id(), "/", b->eos_id(), ")", consequence);
  std::string sample;
  if (!sample_text_path.empty() && fs::Exists(sample_text_path)) {
    sample = fs::ReadFile(sample_text_path).substr(0, 64 * 1024);
    size_t cut = sample.rfind('\n');
    sample = cut == std::string::npos ? std::string() : sample.substr(0, cut);
  }
  sample += "\nThe quick brown fox jumps over the lazy dog. 0123456789 \u00e9t\u00e9 \u00fcber";
  PC_CHECK(a->Encode(sample) == b->Encode(sample), differ, " (they encode the start of '", sample_text_path,
           "' differently)", consequence);
}

}  // namespace pc::cli
