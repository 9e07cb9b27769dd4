// Helpers for model tests: python reference logits, random reference models.
#pragma once

#include <ATen/ATen.h>

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

}  // namespace pc::test
