// pipeline/sweep_results.h — the files of a sweep (docs/HDF5.md "sweep-run" and "sweep-results";
// docs/SWEEPS.md): one run file per finished run, a results file rebuilt from them, and the
// merge of results files (shards of one sweep, or sweeps over the same model and conventions).
// No LibTorch: `perpcomp merge`, `perpcomp rank` and tests read these with the store only.
//
// Crash safety (docs/HDF5.md): a run file exists under its final name only when it is
// complete (store::File::CreateStaged); a results file is never edited, only rebuilt (staged)
// from the complete run files with store::CopyGroup.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "store/file.h"

namespace pc::pipeline {

// The `status` attribute of a finished run.
inline constexpr const char* kRunComplete = "complete";
inline constexpr const char* kRunFailed = "failed";  // the run threw; its run file holds `error`

// sha256 (hex) of conventions.dump(): the `conventions_key` attribute. Two results are
// comparable (mergeable, rankable together) iff their keys are equal.
std::string ConventionsKey(const nlohmann::json& conventions);

// The first place where two JSON values differ, depth-first in key order ("calib.samples",
// "pairs[1].sha256"); `path` is empty when they are equal. `a` and `b` are the two values as
// JSON text ("(absent)" for a missing key).
struct JsonDifference {
  std::string path, a, b;
  bool empty() const { return path.empty(); }
};
JsonDifference FirstDifference(const nlohmann::json& a, const nlohmann::json& b);

// Copies the scalar attributes of `src` (strings, integers, floats, booleans) to `dst`, except
// those named in `skip`.
void CopyScalarAttributes(const store::Group& src, const store::Group& dst, const std::set<std::string>& skip = {});

// "<index>-<run>.h5", the run file's name under <work>/runs/.
std::string RunFileName(int64_t index, const std::string& run);

// What a run file says about itself (the attributes of its one group /runs/<run>).
struct RunFileInfo {
  std::string path, run, status, conventions_key, recipe_yaml;
  int64_t index = -1;
  std::string lm_eval_sha256;  // "" when it holds no lm_eval/ group
  std::string error;  // the message of a failed run
  bool complete() const { return status == kRunComplete; }
  bool failed() const { return status == kRunFailed; }
};
// Throws (naming the file) when the file does not open as a "sweep-run" file with one run.
RunFileInfo ReadRunFileInfo(const std::string& path);

// The root attributes of a results file that do not come from its runs.
struct ResultsHeader {
  std::string sweep;       // the sweep's name
  std::string sweep_yaml;  // the sweep file's text
  nlohmann::json conventions;
  std::string conventions_key;
  int64_t runs_total = 0;  // expanded runs of the whole sweep
  std::string shard;       // "K/N", or "" for the whole sweep
  // Runs that threw (run name, message), not retried: root attribute `failed_runs` (JSON list of
  // {"run", "error"}); absent in files from before it existed.
  std::vector<std::pair<std::string, std::string>> failed;
  // The sweep file's primary comparisons (perp, iso): root attribute `primary_comparisons` (JSON
  // list of pairs); empty: rank's defaults.
  std::vector<std::pair<std::string, std::string>> primary;
};
ResultsHeader ReadResultsHeader(const store::File& results);

// Rebuilds `out` (a staged "sweep-results" file replacing any old one): the header, /reference
// copied from `reference_file` (the group /reference of a sweep's reference file) and the
// reference_* root attributes from it, then /runs/<run> copied from each run file in order.
// `after_copy(k)` is called after the k-th run (1-based) was copied (the crash tests' hook).
void WriteSweepResults(const std::string& out, const ResultsHeader& header, const std::string& reference_file,
                       const std::vector<std::string>& run_files,
                       const std::function<void(size_t copied)>& after_copy = {});

struct MergeSummary {
  size_t runs = 0;        // runs in the merged file
  size_t duplicates = 0;  // identical runs found in more than one input (kept once)
  std::string shard;      // the merged file's shard attribute
};
// Joins sweep-results files into `out` (staged; an existing `out` only with `overwrite`).
// Refuses, naming the files: a file that is not a sweep-results file; files whose
// conventions_key differ (naming the first differing convention and both values); a run name
// present in two files with different contents. Runs of one sweep are ordered by their index.
MergeSummary MergeSweepResults(const std::vector<std::string>& inputs, const std::string& out, bool overwrite);

}  // namespace pc::pipeline
