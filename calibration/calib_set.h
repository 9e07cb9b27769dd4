// calibration/calib_set.h — calibration token windows, with the record of exactly which were used.
//
// Conventions (docs/RECIPES.md; docs/AWQ.md):
//   kAwq     llm-awq: documents (JSON lines, or the lines of a plain text file) shuffled with
//            the seed, each encoded with the tokenizer's special prefix; documents longer than
//            L tokens (and empty ones) skipped; the first `samples` kept, concatenated and cut
//            into L-token blocks (so fewer than `samples` blocks).
//   kRandom  Wanda/GPTQ: `samples` times, a random document with more than L tokens, then a
//            random L-token window of it (a plain text file is one document).
//   self:N   N windows of L tokens sampled from the model itself at temperature 1, starting
//            from BOS (or end-of-text) and restarting after an end token.
// All randomness is std::mt19937_64 with our own integer draws (reproducible on any machine).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <random>
#include <nlohmann/json.hpp>
#include <string>

#include "model/model.h"
#include "model/tokenizer/tokenizer.h"

namespace pc {

enum class Windowing { kAwq, kRandom };
const char* WindowingName(Windowing w);
Windowing ParseWindowing(const std::string& name, const std::string& what);

struct CalibSpec {
  std::string source;        // a text file (plain or *.jsonl), or "self:N"
  int64_t samples = 128;
  int64_t seq_len = 0;       // 0: min(512, context)
  Windowing windowing = Windowing::kAwq;
  uint64_t seed = 0;
  std::string text_field = "text";
};

struct CalibSet {
  at::Tensor tokens;      // (windows, seq_len) int64
  nlohmann::json record;  // source, sha256, windowing, seed, samples, seq_len, and where each window came from
  int64_t windows() const { return tokens.size(0); }
  int64_t seq_len() const { return tokens.size(1); }
};

// The calibration a spec will actually run, as BuildCalibSet runs and records it (one resolver for
// the run, its record and `compress --dry-run`): self:N is N self-sampled windows ("self"
// windowing; samples and windowing of the spec do not apply), seq_len 0 is min(512, context).
struct CalibPlan {
  std::string source;  // "" when none was given
  int64_t samples = 0, seq_len = 0;
  std::string windowing;  // "awq" | "random" | "self"
  uint64_t seed = 0;
  bool self = false;
  std::string Describe() const;  // "self:8, 8 self-sampled windows x 512 tokens, seed 0"
};
CalibPlan ResolveCalib(const CalibSpec& spec, const ModelConfig& config);
CalibSet BuildCalibSet(const CalibSpec& spec, const Tokenizer& tokenizer, Model& model);

// A uniform integer in [0, n) from a 64-bit engine, unbiased (rejection), portable.
uint64_t UniformBelow(uint64_t n, std::mt19937_64& rng);

}  // namespace pc
