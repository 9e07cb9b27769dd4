// pipeline/measure.h — `perpcomp measure` end to end: the directional error of a compressed model
// against its reference at every site (docs/METRICS.md), both models run block by block in
// lockstep (metrics/measure.h), into a "measure" HDF5 file (docs/HDF5.md).
#pragma once

#include <cstdint>
#include <string>

#include "metrics/measure.h"
#include "metrics/reference_cache.h"

namespace pc::pipeline {

// What to measure; plain data, checked once by RunMeasure before any work. Errors name the
// command-line options the fields come from.
struct MeasureRunOptions {
  std::string reference;             // --reference: Hugging Face folder (also the tokenizer)
  std::string compressed;            // --compressed: same architecture
  std::string text;                  // --text: plain UTF-8 or JSON lines
  std::string text_field = "text";   // --text-field
  std::string out;                   // --out: "measure" HDF5 file
  std::string run;                   // --run ("": the compressed folder's name)
  int64_t seq_len = 0;               // --seq-len (0: 2048 capped at the model's context)
  int64_t max_windows = 0;           // --max-windows (0: all)
  int64_t batch = 0;                 // --batch: windows per forward (0: automatic)
  bool per_token = false;            // --per-token: store every token's values
  std::string dtype = "f32";         // --dtype: f32 | bf16
  bool overwrite = false;            // --overwrite
  bool append = false;               // --append
  int64_t memory_limit = 0;          // --max-memory in bytes (0: the machine's available memory)
  CacheOptions cache;                // the reference cache (--cache, --no-cache, --cache-limit)
};

struct MeasureRunResult {
  MeasureResult measure;
  std::string run;          // the run written to `out`
  std::string text_sha256;  // of the text file's bytes
  int layers = 0;           // the reference's blocks
};

// Checks the options and the output, the two models' configs and tokenizers, the memory estimate
// (pipeline/memory_estimate.h) against `memory_limit`; measures; writes and commits the run.
MeasureRunResult RunMeasure(const MeasureRunOptions& opts);

}  // namespace pc::pipeline
