// model/llama2c.h — llama2.c's legacy checkpoint (.bin) as a Hugging Face Llama model.
//
// llama2.c rotates adjacent pairs (x0, x1), (x2, x3)…; Hugging Face Llama rotates halves.
// The q and k projection rows are permuted per head so that the HF forward computes the
// same function (the permutation of HF's convert_llama_weights_to_hf).
#pragma once

#include <memory>
#include <string>

#include "model/model.h"

namespace pc {

std::unique_ptr<Model> ConvertLlama2c(const std::string& weights_path);

// Rows of each head reordered from interleaved rotary pairs (x0, x1), (x2, x3)... — llama2.c's
// layout, and the one llama.cpp's converter writes into GGUF for llama — to Hugging Face's halves
// [evens, odds]. w: (heads * head_dim, ...) — a q/k weight (out, in) or bias (out,).
at::Tensor UnpermuteRotaryRows(const at::Tensor& w, int64_t heads);
// The inverse: Hugging Face's halves to interleaved pairs (llama.cpp's LlamaModel.permute).
at::Tensor PermuteRotaryRows(const at::Tensor& w, int64_t heads);

}  // namespace pc
