// Helpers for the probes tests: small random models built in C++ (no Python needed).
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <string>

#include "model/model.h"

namespace pc::test {

// A random model of `model_type` ("llama" or "gpt_neox"; gpt_neox with parallel residual and
// partial rotary unless `sequential`), weights N(0, 0.2²) so updates are not negligible.
std::unique_ptr<Model> RandomProbeModel(const std::string& model_type, uint64_t seed, bool sequential = false);
// (windows, length) random token ids below `vocab`.
at::Tensor ProbeTokens(int64_t windows, int64_t length, int64_t vocab, uint64_t seed);
// A folder holding only config.json for a 4-layer llama (enough for option checks that read the config).
std::string ConfigOnlyModelDir();

}  // namespace pc::test
