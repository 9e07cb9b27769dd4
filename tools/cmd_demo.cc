// perpcomp demo [--out DIR]
#include "tools/cli.h"
#include "tools/demo.h"

namespace pc::cli {

int RunDemo(const std::vector<std::string>& args) {
  CommonOptions common;
  DemoOptions o;
  po::options_description desc("options");
  desc.add_options()
    ("out", po::value<std::string>(&o.out)->default_value(o.out), "output folder (a previous demo output is replaced)")
    ("cache", po::value<std::string>(&o.cache), "model cache (default $XDG_CACHE_HOME/perpcomp or ~/.cache/perpcomp)")
    ("sweep", po::value<std::string>(&o.sweep), "sweep file (default recipes/sweeps/demo.yaml)")
    ("steps", po::value<int64_t>(&o.steps)->default_value(o.steps), "training steps per model")
    ("fresh", po::bool_switch(&o.fresh), "retrain the models even when cached")
    ("no-sweep", po::bool_switch(&o.skip_sweep), "stop after training and evaluating the models")
    ("overwrite", po::bool_switch(&o.overwrite), "replace an --out that is not a previous demo output");
  AddCommonOptions(desc, common);
  po::variables_map vm;
  if (!Parse("demo", "[--out DIR] [options]", desc, args, vm, nullptr, &common)) return 0;
  return RunDemoJob(o);
}

}  // namespace pc::cli
