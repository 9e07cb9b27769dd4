// Helpers for model tests: python reference logits, random reference models.
#pragma once

#include <ATen/ATen.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace pc::test {

// Runs tests/reference/hf_reference.py <args>; REQUIREs success.
void RunReference(const std::string& args);
// Writes a random model of `arch` (see hf_reference.py make-model) into a temp folder.
std::string MakeReferenceModel(const std::string& arch, const std::string& extra = "");
// Reference logits (windows, T, V) for `tokens` (windows, T) from `subcommand` on `path`.
at::Tensor ReferenceLogits(const std::string& subcommand, const std::string& path, const at::Tensor& tokens);
at::Tensor RandomTokens(int64_t windows, int64_t length, int64_t vocab, uint64_t seed);
// Writes (windows, T) ids as one line of ids per window.
void WriteTokens(const std::string& path, const at::Tensor& tokens);
// Reads logits written by a reference script: `path` (float32) and `path`.json with the shape.
at::Tensor ReadLogits(const std::string& path);

// The reference environment's python: $PERPCOMP_REFENV/bin/python, default
// $XDG_CACHE_HOME/perpcomp/refenv (XDG_CACHE_HOME defaults to ~/.cache); "" when it has no
// python with transformers.
std::string RefenvPython();
// One model made by transformers itself (tests/reference/transformers_ref.py) and its logits.
struct TransformersJob {
  std::string name;          // for messages
  nlohmann::json config;     // model_type plus the config keys (AutoConfig.for_model)
  bool legacy_rope = false;  // rewrite config.json in the transformers 4 rope_scaling form
  int64_t windows = 3, length = 24;
  // Filled by RunTransformersJobs:
  std::string dir;           // the save_pretrained folder
  at::Tensor tokens;         // (windows, length)
  at::Tensor logits;         // transformers' (windows, length, vocab)
};
// Makes every model and computes its logits in one python process; REQUIREs success.
void RunTransformersJobs(std::vector<TransformersJob>& jobs);

}  // namespace pc::test
