// tools/demo.h — `perpcomp demo`: the main job on an embedded default, with nothing but the
// repository: generate the synthetic corpus, train a LayerNorm (gpt_neox) and an RMSNorm (llama)
// model (cached), evaluate them, run the demo sweep on the LayerNorm model, rank, report.
#pragma once

#include <string>

namespace pc::cli {

struct DemoOptions {
  std::string out = "./perpcomp-demo";
  std::string cache;         // default $XDG_CACHE_HOME/perpcomp, else ~/.cache/perpcomp
  std::string sweep;         // default recipes/sweeps/demo.yaml
  bool fresh = false;        // retrain even when cached models exist
  bool overwrite = false;    // replace an --out that is not a previous demo output
  bool skip_sweep = false;
  int64_t steps = 600;       // training steps per model
};

int RunDemoJob(const DemoOptions& options);

}  // namespace pc::cli
