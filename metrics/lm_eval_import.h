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

// One score of a model beside the same task/metric/filter of the reference model's results.
// drop > 0 means worse than the reference: reference - value for scores where higher is better
// (acc, acc_norm, ...), value - reference where lower is better (metrics whose name contains
// "perplexity", and bits_per_byte).
struct LmEvalDrop {
  std::string task, metric, filter;
  double value = 0, reference = 0, drop = 0;
  bool lower_is_better = false;
};

// Every score of `model` whose task, metric and filter the reference also has, in `model`'s
// order; standard errors (metrics ending in "_stderr") are left out. Errors name both files when
// they share no score at all.
std::vector<LmEvalDrop> CompareLmEvalResults(const LmEvalResults& model, const LmEvalResults& reference);

}  // namespace pc
