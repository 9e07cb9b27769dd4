// pipeline/demo.h — `perpcomp demo`: the main job on an embedded default, with nothing but the
// repository: generate the synthetic corpus, train a LayerNorm (gpt_neox) and an RMSNorm (llama)
// model (cached), evaluate them, run the demo sweep on the LayerNorm model, rank, report.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace pc::pipeline {

struct DemoOptions {
  std::string out = "./perpcomp-demo";
  std::string cache;         // default $XDG_CACHE_HOME/perpcomp, else ~/.cache/perpcomp
  std::string sweep;         // default recipes/sweeps/demo.yaml
  bool fresh = false;        // retrain even when cached models exist
  bool overwrite = false;    // replace an --out that is not a previous demo output
  bool skip_sweep = false;
  int64_t steps = 600;       // training steps per model

  void Validate() const;
};

struct DemoModel {
  std::string label;  // "layernorm" / "rmsnorm"
  std::string arch;   // config.json model_type
  std::string dir;    // the model folder in the cache
  bool cached = false;
  double train_seconds = 0;
  nlohmann::json eval;  // parameters, valid_ppl, unigram_ppl, pairs (accuracy per file), ...
};

struct DemoResult {
  std::string out;     // the output folder (as given)
  std::string summary; // out/perpcomp-demo.json: the summary of everything below
  double seconds = 0;
  std::vector<DemoModel> models;  // layernorm, rmsnorm
  nlohmann::json sweep;           // null with skip_sweep; else sweep, runs, results, report, headline
};

// Writes `options.out` (staged: a failed run leaves any previous output as it was) and returns
// what it wrote.
DemoResult RunDemo(const DemoOptions& options);

}  // namespace pc::pipeline
