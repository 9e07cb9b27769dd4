// perpcomp merge a.h5 b.h5 ... --out all.h5 [--overwrite]
// Joins sweep-results files (the shards of one sweep, or sweeps over the same model and
// conventions) into one, crash-safely (docs/SWEEPS.md "Merging"; pipeline/sweep_results.h).
#include <cstdio>

#include "core/error.h"
#include "pipeline/sweep_results.h"
#include "tools/cli.h"

namespace pc::cli {

int RunMerge(const std::vector<std::string>& args) {
  CommonOptions common;
  std::vector<std::string> inputs;
  std::string out;
  bool overwrite = false;
  po::options_description desc("options");
  desc.add_options()
    ("inputs", po::value<std::vector<std::string>>(&inputs), "sweep-results files to join (positional)")
    ("out", po::value<std::string>(&out), "merged results file (kind sweep-results)")
    ("overwrite", po::bool_switch(&overwrite), "replace an existing --out (written beside it, renamed when complete)");
  AddCommonOptions(desc, common);
  po::positional_options_description positional;
  positional.add("inputs", -1);
  po::variables_map vm;
  if (!Parse("merge", "a.h5 b.h5 ... --out all.h5 [--overwrite]", desc, args, vm, &positional, &common)) return 0;
  PC_CHECK(!inputs.empty(), "merge: give the sweep-results files to join (perpcomp merge a.h5 b.h5 --out all.h5)");
  PC_CHECK(!out.empty(), "--out is required: the merged results file");
  pipeline::MergeSummary s = pipeline::MergeSweepResults(inputs, out, overwrite);
  std::printf("merged %zu runs from %zu files into %s%s%s\n", s.runs, inputs.size(), out.c_str(),
              s.duplicates > 0 ? Str(" (", s.duplicates, " identical duplicates kept once)").c_str() : "",
              s.shard.empty() ? "" : Str(" (shards ", s.shard, ")").c_str());
  return 0;
}

}  // namespace pc::cli
