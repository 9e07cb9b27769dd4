// tests/oracle/oracle_util.h — running tests/oracle/hf_oracle.py (transformers in the reference
// environment) and reading what it wrote.
#pragma once

#include <ATen/ATen.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace pc::test {

// Runs `hf_oracle.py <args>` in the reference environment; REQUIREs success (stderr in the report).
void RunOracle(const std::string& args);
// Token windows (windows, length) int64 of real text: the UTF-8 bytes of WikiText-2 test from
// `offset` on (byte ids are below every oracle model's vocabulary).
at::Tensor WikiTextByteWindows(int64_t windows, int64_t length, int64_t offset = 4096);
// Writes `tokens` (windows, T) as hf_oracle.py reads them; returns the path.
std::string WriteTokens(const at::Tensor& tokens, const std::string& dir);
struct OracleForward {
  at::Tensor logits;    // (windows, T, V) float32, transformers' forward
  nlohmann::json meta;  // X.oracle.json (hf_oracle.py: nll, loading info, warnings)
};
OracleForward ReadOracle(const std::string& prefix);  // X.oracle and X.oracle.json
// Mean next-token NLL of `logits` (windows, T, V) on `tokens` (windows, T), in float64 (the
// convention of transformers' labels=input_ids loss: every window's T-1 predictions).
double MeanNextTokenNll(const at::Tensor& logits, const at::Tensor& tokens);
// Everything that went wrong when transformers loaded the folder ("" when nothing): missing,
// unexpected, mismatched keys, load errors, checkpoint tensors it drops silently (ignore patterns),
// and warnings transformers logged.
std::string LoadProblems(const nlohmann::json& meta);

}  // namespace pc::test
