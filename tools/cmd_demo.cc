// perpcomp demo [--out DIR]: the run is pipeline::RunDemo (pipeline/demo.h); this prints its summary.
#include <cmath>
#include <cstdio>

#include "pipeline/demo.h"
#include "tools/cli.h"

namespace pc::cli {
namespace {

void PrintDemo(const pipeline::DemoResult& r) {
  std::printf("\nperpcomp demo: done in %.0f s\n\n", r.seconds);
  std::printf("%-10s %-9s %8s %10s %10s %8s %8s %8s\n", "model", "arch", "params", "valid ppl", "unigram", "0 attr",
              "1 attr", "2 attr");
  for (const auto& m : r.models) {
    const auto& e = m.eval;
    auto acc = [&](const char* f) { return e["pairs"].value(f, NAN) * 100; };
    std::printf("%-10s %-9s %8lld %10.2f %10.1f %7.1f%% %7.1f%% %7.1f%%\n", m.label.c_str(), m.arch.c_str(),
                (long long)e["parameters"].get<int64_t>(), e["valid_ppl"].get<double>(),
                e["unigram_ppl"].get<double>(), acc("agreement_0_attractors"), acc("agreement_1_attractor"),
                acc("agreement_2_attractors"));
  }
  std::printf("\n  corpus:   %s/corpus (train.txt, valid.txt, pairs/, depths.jsonl)\n", r.out.c_str());
  for (const auto& m : r.models) std::printf("  %-9s %s%s\n", (m.label + ":").c_str(), m.dir.c_str(), m.cached ? " (cached)" : "");
  if (!r.sweep.is_null()) {
    std::printf("  sweep:    %s (%d runs)\n  report:   %s\n\n%s", r.sweep["results"].get<std::string>().c_str(),
                r.sweep["runs"].get<int>(), r.sweep["report"].get<std::string>().c_str(),
                r.sweep["headline"].get<std::string>().c_str());
  }
  std::printf("  summary:  %s\n", r.summary.c_str());
}

}  // namespace

int RunDemo(const std::vector<std::string>& args) {
  CommonOptions common;
  pipeline::DemoOptions o;
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
  o.Validate();
  PrintDemo(pipeline::RunDemo(o));
  return 0;
}

}  // namespace pc::cli
