// tools/model_options.h — the model options shared by verbs that run a model.
#pragma once

#include <memory>
#include <string>

#include "model/model.h"
#include "model/tokenizer/tokenizer.h"
#include "tools/cli.h"

namespace pc::cli {

struct ModelOptions {
  std::string model;
  std::string dtype = "f32";
  bool load_blocks = true;  // false: blocks stay in the checkpoint for a block-by-block run (metrics/block_stream.h)
  bool load_head = true;    // false: an untied head stays in the checkpoint until it is needed
};

// --model DIR (required unless `required` is false), --dtype.
void AddModelOptions(po::options_description& desc, ModelOptions& opts, bool required = true);
std::unique_ptr<Model> LoadModel(const ModelOptions& opts);
// The model folder's tokenizer; errors name the folder.
std::unique_ptr<Tokenizer> LoadModelTokenizer(const std::string& model_dir);
// A model compared with a reference must read the same token ids: refuses when their tokenizers
// differ in vocabulary size, special ids, or the ids of `sample_text` (the start of the evaluation
// text, up to its last line break within 64 KiB). Tokenizer files that differ only in form pass.
void CheckSameTokenizer(const std::string& model_dir, const std::string& model_name, const std::string& reference_dir,
                        const std::string& sample_text_path);

}  // namespace pc::cli
