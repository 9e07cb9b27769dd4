// metrics/lm_eval_import.h — an lm-evaluation-harness results JSON as downstream scores of a
// run (`perpcomp eval --import-lm-eval FILE.json`).
//
// The file's "results" object maps task -> metric -> value. Metric keys are "acc" in older
// versions and "acc,none" (metric,filter) in newer ones; both are read, the filter kept
// separately. Non-numeric values ("alias": "blimp", "N/A") are skipped.
#pragma once

#include <string>
#include <vector>

namespace pc {

struct LmEvalScore {
  std::string task;    // "blimp_regular_plural_subject_verb_agreement_1"
  std::string metric;  // "acc", "acc_stderr", "perplexity", ...
  std::string filter;  // "none" for "acc,none"; "" when the key has no filter
  double value = 0;
};

struct LmEvalResults {
  std::string path, sha256;
  std::vector<LmEvalScore> scores;  // tasks sorted by name, metrics in file order
  std::string model_args;           // config.model_args when present ("" otherwise)
};

// Errors name the file: missing, not JSON, no "results" object, a task that is not an object,
// no numeric score at all.
LmEvalResults ReadLmEvalResults(const std::string& path);

}  // namespace pc
