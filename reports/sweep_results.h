// reports/sweep_results.h — a sweep-results file (docs/HDF5.md "sweep-results", written by `perpcomp sweep`
// and `perpcomp merge`) read into plain data for `perpcomp rank`: the runs with their attributes, the measure
// tables (`sites`, `weights`), the downstream scores, the minimal-pair and lm-eval results, and the conventions
// under which every number was made.
//
// Checks (each error names the file and the group): the kind (`sweep-results`, by store::File::OpenRead),
// at least one run, the attributes and tables rank needs, `status` = "complete", and one `conventions_key`
// for the file and every run (merge refuses mixed files; rank checks anyway, naming the first differing
// convention).
//
// The same structs hold runs read back from the tables of earlier rank reports (`perpcomp rank --tables`,
// reports/rank_tables.h): such a run has its saved values (SweepRun::saved) instead of measure tables and
// downstream groups, and SweepResults::tables names the folders.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "store/table.h"

namespace pc::reports {

// One lm-evaluation-harness score (an `lm_eval/scores` row).
struct LmEvalScore {
  std::string task, metric, filter;
  double value = 0;
};

// One minimal-pair file of a run (a `pairs/files` row).
struct PairFileScore {
  std::string file;
  int64_t pairs = 0;
  double accuracy = 0;
  double accuracy_drop = 0;  // NaN when the file has no `accuracy_drop` column
};

// The values an earlier `perpcomp rank --out DIR` wrote for one run (reports/rank_tables.h).
struct SavedRun {
  std::string folder;                        // DIR
  std::map<std::string, double> predictors;  // predictor_values.csv: every column that names a predictor
  std::map<std::string, double> outcomes;    // outcome_values.csv: the non-empty cells of the outcome columns
  std::string calibration, seconds;          // runs.csv's cells as rank wrote them ("" when the column is absent)
};

struct SweepRun {
  std::string name;  // the group name under /runs
  int64_t index = -1;
  // params: the main method's parameters as JSON (a run from saved tables: runs.csv's text "k=v, ...").
  std::string recipe, method, family, params, recipe_yaml, compression, status;
  std::string method_family;  // MethodFamily(method, params): what leave-one-family-out leaves out
  std::string conventions, conventions_key;
  double seconds_compress = 0, seconds_measure = 0, seconds_eval = 0;  // NaN when absent

  // Measure attributes of the run group, when present ("" / -1 otherwise).
  std::string text, text_sha256;
  int64_t seq_len = -1, windows = -1, tokens = -1;

  store::Table sites;                        // the measure `sites` table
  std::optional<store::Table> weights;       // the measure `weights` table
  std::map<std::string, double> downstream;  // every float attribute of `downstream`

  bool has_pairs = false;
  double pairs_accuracy = 0, pairs_ref_accuracy = 0, pairs_accuracy_drop = 0;  // NaN when absent
  std::vector<PairFileScore> pair_files;

  bool has_lm_eval = false;
  std::string lm_eval_source, lm_eval_sha256;
  std::vector<LmEvalScore> lm_eval;

  // Set for a run read from saved tables: then `sites` is empty and the tables, downstream scores, records,
  // conventions and seconds above are absent; the measure attributes are its folder's rank_inputs.json's.
  std::optional<SavedRun> saved;
};

// A folder of saved tables the runs were read from (--tables DIR).
struct TablesFolder {
  std::string path;
  bool checked = false;                // it has a rank_inputs.json, checked against the other folders'
  std::vector<std::string> sweeps;     // the sweeps its rank_inputs.json names
  std::vector<std::string> unchecked;  // folders its runs were joined from without a rank_inputs.json (recorded)
  std::vector<std::string> outcomes;   // its outcome_values.csv's outcome columns, in file order
  std::vector<std::string> ignored;    // its columns that name no predictor or outcome of this version
};

// The method family of a run for the rankings: the method's name (rtn, awq, perp-awq, gptq,
// magnitude, wanda, wanda-perp, sparsegpt), except "joint" for SparseGPT with joint quantization
// (`bits` > 0 in the run's main-method params JSON).
std::string MethodFamily(const std::string& method, const std::string& params_json);

struct SweepResults {
  std::string path;
  std::string created_by, created_at;
  std::string sweep, sweep_yaml, conventions, conventions_key, shard;
  int64_t runs_total = 0, runs_complete = 0;
  std::vector<std::pair<std::string, std::string>> failed;  // runs that threw (name, message): root failed_runs
  // Primary comparisons (perp, iso predictor names) declared by the sweep: root primary_comparisons.
  std::vector<std::pair<std::string, std::string>> primary;
  double reference_ppl = 0, reference_mean_nll = 0, reference_pairs_accuracy = 0;  // NaN when absent
  std::vector<SweepRun> runs;                                                      // ordered by `index`, then by name
  size_t runs_in_file = 0;  // runs read from the file (SelectRuns may keep fewer)
  std::string selection;    // the SelectRuns spec that chose `runs` ("" = every run of the file)
  // --tables: the folders, in the order given (empty for a results file). `path` then names them all; the
  // conventions, reference scores and primary comparisons are those their rank_inputs.json files agree on.
  std::vector<TablesFolder> tables;
  // The runs read from `folder` (--tables).
  size_t RunsFrom(const TablesFolder& folder) const;
};

// Reads and checks a sweep-results file (see the top of this file).
SweepResults ReadSweepResults(const std::string& path);

// The first place where two conventions JSON texts differ, depth-first in key order, as "'seq_len': 512 vs 256"
// or "'calib.samples': 128 vs 64" ("'x': absent vs 3" for a missing key); "" when they are equal; a text that is
// not a JSON object is compared whole.
std::string FirstConventionDifference(const std::string& a, const std::string& b);

}  // namespace pc::reports
