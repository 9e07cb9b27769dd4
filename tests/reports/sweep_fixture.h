// tests/reports/sweep_fixture.h — synthetic sweep-results files for the rank tests, written through the store
// exactly as /work/notes/sweep_schema.md (docs/HDF5.md "sweep-run", "sweep-results") lays them out: root
// attributes, /runs/<run> with the run attributes, the measure tables (`sites` with every column, `weights`),
// `downstream`, `pairs/` (with accuracy_drop), `compress/`, `lm_eval/`, and /reference.
//
// Values are deterministic functions of a few per-run knobs, so tests know what to expect; `site_value` can
// override any float cell of the sites table (hand-computed aggregates).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace pc::test {

struct FixtureRun {
  std::string name, method, family;
  double par = 0.01;        // ratio_par of the block outputs (accumulated) at the last layer
  double perp = 0.01;       // ratio_perp likewise
  double delta_nll = 0.05;  // downstream ΔNLL; KL, top-1, pair drops and lm-eval follow from it
  double rel_fro = 0.05;    // weights: rel_fro of the last block's linears
  bool lm_eval = true;      // write lm_eval/ for this run
};

// One row of the sites table (what a site_value override sees).
struct FixtureSiteRow {
  std::string name, site, role, kind, frame;
  int64_t layer = -1;
};

struct SweepFixture {
  std::string sweep = "fixture-sweep";
  int layers = 3;
  std::vector<FixtureRun> runs;
  bool pairs = true;
  std::vector<std::string> pair_files = {"agreement.jsonl", "blimp_sva.jsonl"};
  bool weights = true;
  bool final_norm = true;
  int64_t runs_total = 0;  // 0: runs.size()
  std::string shard;
  // conventions_key of run i replaced (a mixed file, which merge would refuse), with its conventions JSON.
  std::optional<size_t> odd_conventions_run;
  // Overrides a float cell of a run's sites table: (run index, row, column) -> value.
  std::function<std::optional<double>(size_t, const FixtureSiteRow&, const std::string&)> site_value;
};

// `n` runs in two families (quantization: rtn/awq; pruning: magnitude/wanda) where ΔNLL follows the
// perpendicular error closely and the parallel error varies independently, so perp predicts better than iso.
SweepFixture DefaultFixture(int n, uint64_t seed = 1);

// The conventions JSON text of the fixture (and its sha256, the conventions_key).
std::string FixtureConventions(const SweepFixture& f);

// Writes the file (staged; an existing file is replaced).
void WriteSweepResults(const std::string& path, const SweepFixture& f);

}  // namespace pc::test
