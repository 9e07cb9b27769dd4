// reports/outcomes.h — the downstream scores (outcomes) of `perpcomp rank`, one per run, from each run's
// `downstream`, `pairs/` and `lm_eval/` groups (docs/HDF5.md; definitions in docs/METRICS.md and
// docs/RANKING.md):
//   delta_nll            ΔNLL = mean NLL(compressed) − mean NLL(reference), nats per predicted token
//   kl_mean, kl_p90, kl_p99   KL(reference ‖ compressed) per predicted token: mean, 90th and 99th percentile
//   top1_disagreement    1 − top-1 agreement of the next-token argmax
//   pairs.accuracy_drop  minimal-pair accuracy of the reference minus that of the run (all files)
//   pairs.accuracy_drop.<file>   the same per file (when the runs have two or more files)
//   lm_eval.<task>.<metric>[,<filter>]   imported lm-evaluation-harness scores (stderr metrics left out);
//                        higher is better except for perplexities and bits/byte
// An outcome that some runs lack (an attribute absent, lm-eval imported for some runs only) is correlated over
// the runs that have it; `n` says how many. Runs read from saved tables (--tables, reports/rank_tables.h) carry
// the values rank wrote into outcome_values.csv; an outcome that some folder has no column for is left out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "reports/stats.h"
#include "reports/sweep_results.h"

namespace pc::reports {

struct OutcomeInfo {
  std::string name;         // "delta_nll"
  std::string title;        // "ΔNLL (nats/token)"
  std::string description;  // one sentence
  Orientation orientation = Orientation::kHigherIsWorse;
};

struct OutcomeMatrix {
  std::vector<OutcomeInfo> outcomes;
  std::vector<std::vector<double>> values;    // [outcome][run]; NaN where absent
  std::vector<std::vector<uint8_t>> present;  // [outcome][run]: 1 when the run has the outcome
  std::vector<std::string> left_out;          // saved tables: "name: not in DIR/outcome_values.csv"
  // The index of `name`, or an error listing the outcomes (--outcome).
  size_t Find(const std::string& name) const;
  // Runs that have outcome `o`.
  std::vector<size_t> RunsWith(size_t o) const;
};

// Outcomes present in at least one run, in the order above (lm-eval sorted by task, metric, filter); for saved
// tables, in the order of the first folder's columns.
OutcomeMatrix ExtractOutcomes(const SweepResults& results);

// The outcome called `name` (one of the names above, the per-file and lm-eval ones included), or nullopt.
std::optional<OutcomeInfo> DescribeOutcome(const std::string& name);

}  // namespace pc::reports
