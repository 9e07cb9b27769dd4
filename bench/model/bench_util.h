// bench/model/bench_util.h — random models of published shapes, timing helpers.
#pragma once

#include <ATen/ATen.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "model/model.h"

namespace pc::bench {

// A seeded random model shaped like Pythia-160M (gpt_neox: hidden 768, 12 layers, 12 heads,
// intermediate 3072, vocab 50304), or a smaller one of the same family for quick runs.
std::unique_ptr<Model> RandomPythia(int64_t hidden = 768, int64_t layers = 12, int64_t heads = 12,
                                    int64_t vocab = 50304, at::ScalarType dtype = at::kFloat, uint64_t seed = 0);
// Same shapes as a Hugging Face folder on disk (for commands that load from disk).
void WriteRandomPythia(const std::string& dir, int64_t hidden = 768, int64_t layers = 12, int64_t heads = 12,
                       int64_t vocab = 50304, uint64_t seed = 0);

// Median wall time in seconds of `fn` over `reps` runs after one warm-up.
double TimeIt(const std::function<void()>& fn, int reps = 3);
double PeakRssBytes();  // VmHWM of this process
void ResetPeakRss();    // writes 5 to /proc/self/clear_refs (resets VmHWM where supported)
double CurrentRssBytes();

}  // namespace pc::bench
