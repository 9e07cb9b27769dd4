// reports/run_selection.h — the runs `perpcomp rank --runs SPEC` ranks (docs/RANKING.md "Selecting runs"):
// the within-family and near-lossless analyses of a sweep without rewriting its results file.
//
// SPEC is one or more terms joined by ',' that a run must all meet:
//   family=A|B|...   the run's `family` (quantization, pruning) or its method family (MethodFamily: rtn, awq,
//                    perp-awq, gptq, magnitude, wanda, wanda-perp, sparsegpt, joint) is one of the names;
//   run=A|B|...      the run's name is one of the names; run!=A|B|... it is none of them (each name must be a
//                    run of the results);
//   OUTCOME<X, OUTCOME<=X, OUTCOME>X, OUTCOME>=X
//                    a downstream outcome (ExtractOutcomes' names: delta_nll, kl_mean, ...) against a number;
//                    a run without that outcome does not meet it.
// Errors name the term and list what the file has; a spec that keeps no run is an error.
#pragma once

#include <string>

#include "reports/sweep_results.h"

namespace pc::reports {

// `results` with only the runs that meet every term of `spec`, in the same order; `selection` = spec.
// Takes the results by value: move them in to select without copying the runs.
SweepResults SelectRuns(SweepResults results, const std::string& spec);

}  // namespace pc::reports
