// Placeholder until `perpcomp sweep` and `perpcomp rank` land: one RTN compression.
#include "tools/demo_sweep.h"

#include <cstdio>

#include "core/fs.h"
#include "recipes/compress_run.h"

namespace pc::cli {

nlohmann::json RunDemoSweep(const std::string& model_dir, const std::string& corpus_dir, const std::string& sweep_file,
                            const std::string& staged_out, const std::string& final_out) {
  recipes::CompressRunOptions ro;
  ro.model_dir = model_dir;
  ro.out_dir = fs::Join(staged_out, "rtn-w4g128");
  ro.calib.source = fs::Join(corpus_dir, "train.txt");
  ro.calib.samples = 64;
  ro.calib.seq_len = 64;
  auto r = recipes::RunCompress(recipes::LoadRecipe("rtn-w4g128"), ro);
  return {{"compressed", fs::Join(final_out, "rtn-w4g128")}, {"seconds", r.engine.seconds}};
}

void PrintDemoSweep(const nlohmann::json& sweep) {
  std::printf("  compressed: %s\n", sweep["compressed"].get<std::string>().c_str());
}

}  // namespace pc::cli
