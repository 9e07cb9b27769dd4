// Helpers for the metrics tests: model folders (random reference models, stories260K with its
// tokenizer), edited copies, fake quantization, lookups in a MeasureResult.
#pragma once

#include <ATen/ATen.h>

#include <functional>
#include <string>

#include "metrics/measure.h"
#include "model/model.h"

namespace pc::test {

// A seeded random model folder of `arch` (tests/reference/hf_reference.py make-model).
std::string RandomModelDir(const std::string& arch, const std::string& extra = "");
// Loads `src`, applies `edit`, saves the result into a new temporary folder and returns it.
std::string EditedCopy(const std::string& src, const std::function<void(Model&)>& edit, const std::string& name);
// stories260K as a Hugging Face folder with its tokenizer, converted once per process;
// "" when the shared data is absent.
std::string Stories260KDir();
// Symmetric round-to-nearest fake quantization of every block linear weight: `bits` bits,
// groups of `group` inputs (the last group may be shorter).
void FakeQuantize(Model& model, int bits, int64_t group);
// Adds sigma·‖W‖/sqrt(numel)·N(0,1) (seeded) to every block linear weight.
void AddWeightNoise(Model& model, double sigma, uint64_t seed);

// The entry's position in r.sites; REQUIREs that it exists.
int EntryOf(const MeasureResult& r, SiteType type, int layer, int index, ErrorKind kind, Frame frame);
// Per-token value of entry e at flat token t (PerTokenValues layout).
inline int64_t TokenIndex(const MeasureResult& r, int e, int64_t t) {
  return static_cast<int64_t>(e) * r.per_token.windows * r.per_token.seq_len + t;
}

// A short TinyStories-like English text (about 2,400 characters).
const std::string& StoryText();

}  // namespace pc::test
