// pipeline/run_io.h — inputs and outputs shared by the runs (`eval`, `measure`, `kld`, `probe`,
// `sweep`): models and tokenizers loaded from their folders, token windows of a text
// (docs/METRICS.md), the dtypes of a run, and run files (docs/HDF5.md): one run group /runs/<name>
// in a staged file of a given kind, optionally appended to an existing file (rebuilt
// crash-safely: the old runs copied into a new staged file, renamed over the old one).
// Errors name the command-line options the values come from (tools/ parses them).
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <string>

#include "calibration/windows.h"
#include "core/text.h"
#include "model/model.h"
#include "model/tokenizer/tokenizer.h"
#include "store/file.h"

namespace pc::pipeline {

// ---- Models -------------------------------------------------------------------------------

struct ModelOptions {
  std::string model;        // --model: Hugging Face folder
  std::string dtype = "f32";  // --dtype: f32 | bf16
  bool load_blocks = true;  // false: blocks stay in the checkpoint for a block-by-block run (metrics/block_stream.h)
  bool load_head = true;    // false: an untied head stays in the checkpoint until it is needed
};

std::unique_ptr<Model> LoadModel(const ModelOptions& opts);
// The model folder's tokenizer; errors name the folder.
std::unique_ptr<Tokenizer> LoadModelTokenizer(const std::string& model_dir);
// A model compared with a reference must read the same token ids: refuses when their tokenizers
// differ in vocabulary size, special ids, or the ids of `sample_text` (the start of the evaluation
// text, up to its last line break within 64 KiB). Tokenizer files that differ only in form pass.
void CheckSameTokenizer(const std::string& model_dir, const std::string& model_name, const std::string& reference_dir,
                        const std::string& sample_text_path);

// The dtypes of a run with --dtype `dtype`: the weights' and the one they are computed in
// (core/tensor_util.h ComputeDType: bf16 is computed in f32 on a CPU without native bf16), their
// element sizes for the memory estimate, and the name recorded as `compute_dtype` in the outputs.
struct RunDTypes {
  at::ScalarType weights = at::kFloat;
  at::ScalarType compute = at::kFloat;
  int weight_bytes = 4;
  int compute_bytes = 4;
  std::string compute_name = "f32";
};
RunDTypes ResolveDTypes(const std::string& dtype);

// ---- Text windows -------------------------------------------------------------------------

struct TextWindows {
  TextSource text;
  TokenWindows windows;
};

// Reads --text, tokenizes it with `tokenizer_dir`'s tokenizer, cuts windows. seq_len 0: the
// model's context. Errors name the option and the counts (text shorter than one window).
TextWindows LoadTextWindows(const std::string& text_path, const std::string& text_field, int64_t seq_len,
                            int64_t max_windows, const ModelConfig& config, const std::string& tokenizer_dir);

// ---- Run files ----------------------------------------------------------------------------

struct RunOutputOptions {
  std::string path;       // --out
  std::string kind;       // store::kind::kMeasure / kEval
  std::string run;        // run name
  bool overwrite = false; // replace the file (or, with append, a run of the same name)
  bool append = false;    // add the run to an existing file of this kind
};

// Fails before any work when the output cannot be written as asked: an existing file without
// --overwrite/--append; a file to be replaced or appended to that is not a perpcomp file of
// this kind, or of a newer schema; a run name already in the file (append without --overwrite).
void CheckRunOutput(const RunOutputOptions& o);

// The staged output with /runs/<run> created (and, when appending, the other runs copied).
// Call Commit() on `writer` when the run is complete.
struct RunOutput {
  store::StagedWriter writer;
  store::Group run;
};
RunOutput StartRunOutput(const RunOutputOptions& o);

// The default run name: the folder's name.
std::string DefaultRunName(const std::string& model_dir);

// The compressed model's compression record (config.json "perpcomp_compression") as JSON text,
// or "" when absent.
std::string CompressionRecord(const Model& model);

}  // namespace pc::pipeline
