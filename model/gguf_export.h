// model/gguf_export.h — a Hugging Face model folder as a llama.cpp GGUF file (the inverse of
// model/gguf_convert.h; `perpcomp convert --to gguf`, and `compress --format gguf` through
// compress/export.h).
//
// Everything per architecture comes from the tables (model/arch.h): general.architecture is the
// table's gguf_arch, the tensor names its modules' GGUF names, the layout changes llama.cpp's
// converter makes are the inverses of what ConvertGguf undoes (gguf_rows: q/k rows permuted to
// interleaved pairs per head, or fused per-head qkv rows regrouped into [q; k; v] blocks; conv1d:
// weights written (out, in)), and <arch>.* holds the config through the reader's own key list
// (GgufMetaKeys), plus vocab_size and rope.dimension_count. The tokenizer: GgufTokenizerMetadata
// (model/gguf_tokenizer.h). Types, as llama.cpp's converter writes them: 1-D tensors (norms,
// biases) F32; 2-D tensors `outtype` (F32, F16 or BF16), or the block type `codec` gives a linear
// (compress/export.h: the fake-quantized weights as Q4_0, Q4_1, Q8_0). A value beyond the F16 range
// is refused naming the tensor. Refused: architectures llama.cpp has no name for, scaled RoPE,
// sliding-window attention, an activation other than the architecture's default (llama.cpp
// records none), AWQ activation scales left as tensors.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "model/gguf_format.h"
#include "model/model.h"

namespace pc {

// Block types for some linears, by Hugging Face module name, and their encoder: called once per
// such linear with its weight (out, in) float32 in the GGUF row order (after the permutations
// above, which move whole rows and so keep every group of a row together); returns the tensor's
// bytes.
struct GgufLinearCodec {
  std::map<std::string, GgmlType> types;
  std::function<std::string(const std::string& module, const at::Tensor& weight)> encode;
};

struct GgufWriteOptions {
  GgmlType outtype = GgmlType::kF16;  // 2-D tensors without a codec type: kF32, kF16 or kBF16
  bool overwrite = false;
  const GgufLinearCodec* codec = nullptr;
};

// The checks WriteGguf makes on the config and the folder's tokenizer, before anything is computed.
void CheckGgufWritable(const Model& model);

// Writes `model` (every block loaded or loadable) to `path`, holding every tensor in float32 while
// it writes (the model's size in f32, plus a copy of the permuted q/k rows); the tokenizer comes from
// model.source_dir() (or `tokenizer_dir` when not empty).
void WriteGguf(Model& model, const std::string& path, const GgufWriteOptions& options,
               const std::string& tokenizer_dir = "");

// "f32" | "f16" | "bf16" -> the type; errors name `option`.
GgmlType ParseGgufOuttype(const std::string& name, const std::string& option);

}  // namespace pc
