// bench/metrics/pairs_bench.cc — minimal-pair scoring speed (metrics/minimal_pairs.h
// ScoreMinimalPairs): the 6000 BLiMP subject-verb-agreement pairs (blimp-sva) on stories260K,
// converted from llama2c in memory. It replaces the timed assertion tests/metrics/minimal_pairs_test.cc had.
//
//   build/bench/metrics/pairs_bench [--threads N] [--reps 3] [shared-data-dir]
// The shared data: the argument, else $PERPCOMP_SHARED/data, else <source>/../shared/data.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/cpu_model.h"
#include "core/blas.h"
#include "core/fs.h"
#include "core/threads.h"
#include "metrics/minimal_pairs.h"
#include "metrics/pairs_file.h"
#include "model/llama2c.h"
#include "model/tokenizer/tokenizer.h"

int main(int argc, char** argv) {
  pc::SelectBlasKernels(argv);  // the kernels perpcomp itself runs (core/blas.h)
  int reps = 3, threads = 1;
  std::string data;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else {
      data = argv[i];
    }
  }
  if (data.empty()) {
    const char* env = std::getenv("PERPCOMP_SHARED");
    data = (env != nullptr && *env) ? std::string(env) + "/data" : std::string(PC_SOURCE_DIR) + "/../shared/data";
  }
  const std::string bin = data + "/models/stories260K/stories260K.bin";
  if (!pc::fs::Exists(bin)) {
    std::fprintf(stderr, "pairs_bench: '%s' not found; pass the shared data folder as the argument\n", bin.c_str());
    return 2;
  }
  pc::SetThreads(threads);
  auto model = pc::ConvertLlama2c(bin);
  auto tok = pc::TokenizerFromLlama2c(data + "/models/stories260K/tok512.bin",
                                      static_cast<int32_t>(model->config().vocab_size));
  std::vector<pc::MinimalPair> pairs;
  for (const auto& f : pc::ResolvePairFiles("blimp-sva", data)) {
    auto p = pc::ReadMinimalPairs(f);
    pairs.insert(pairs.end(), p.begin(), p.end());
  }
  pc::bench::PrintCpu();
  std::vector<double> times;
  for (int r = 0; r <= reps; ++r) {
    const auto start = std::chrono::steady_clock::now();
    auto scores = pc::ScoreMinimalPairs(*model, *tok, pairs);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (r > 0) times.push_back(s);  // r = 0: warm-up
  }
  std::sort(times.begin(), times.end());
  std::printf("| model | pairs | threads | seconds (median of %d) | pairs/s |\n|---|---:|---:|---:|---:|\n", reps);
  const double median = times[times.size() / 2];
  std::printf("| stories260K | %zu | %d | %.2f | %.0f |\n", pairs.size(), pc::GetThreads(), median,
              static_cast<double>(pairs.size()) / median);
  return 0;
}
