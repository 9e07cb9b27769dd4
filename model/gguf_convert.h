// model/gguf_convert.h — a llama.cpp GGUF file as a Hugging Face model folder.
//
// Architectures (general.architecture): llama (also the Mistral-style files llama.cpp labels
// llama), qwen2, qwen3, gpt2, gptneox. The GGUF tensor names, the config.json keys and the layout
// changes of llama.cpp's converter that are undone (the q/k row permutation of llama, GPT-2's
// transposed Conv1D weights, GPT-NeoX's [q; k; v] blocks) come from the architecture tables
// (model/arch.h: gguf_arch, the modules' GGUF names, gguf_rows, conv1d, ConfigKeys); the only list
// here is llama.cpp's metadata key names, which are the same for every architecture. Tensors are dequantized to f32 (model/gguf_quants.h); F16 and BF16
// tensors stay as stored unless `f32`. The tokenizer: model/gguf_tokenizer.h.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model/arch.h"
#include "model/gguf_format.h"
#include "model/gguf_tokenizer.h"
#include "model/model.h"

namespace pc {

struct GgufConvertOptions {
  bool f32 = false;  // write F16/BF16 tensors as f32 too
};

struct GgufModel {
  std::unique_ptr<Model> model;
  GgufTokenizerFiles tokenizer;
};

// Reads and validates the file, maps every tensor to its Hugging Face name (a tensor the table does
// not know is an error naming it), builds config.json from the metadata. Errors name the file, the
// key or the tensor.
GgufModel ConvertGguf(const std::string& path, const GgufConvertOptions& options = {});

// ConvertGguf, then the Hugging Face folder `out_dir` (staged): config.json, model.safetensors,
// tokenizer.json and tokenizer_config.json; the tokenizer is loaded back before the folder is
// renamed into place.
void ConvertGgufToFolder(const std::string& path, const std::string& out_dir, const GgufConvertOptions& options,
                         bool overwrite);

// One GGUF metadata key (after "<arch>.") and the config.json key of the architecture table that
// receives it (model/arch.h ConfigKeys; "" : the architecture has no such key, the metadata is not
// read). The GGUF names are llama.cpp's, the same for every architecture: the one list both the
// reader (ConvertGguf) and the writer (model/gguf_export.h) use.
struct GgufMetaKey {
  const char* gguf;
  const char* ConfigKeys::*hf;
  bool required;
};
std::vector<GgufMetaKey> GgufMetaKeys(const ArchSpec& a);

// The GGUF architectures ConvertGguf knows, for messages and --help.
std::string GgufArchitectureNames();

}  // namespace pc
