// tools/run_io.h — inputs and outputs shared by `measure` and `eval`: token windows of a
// text (docs/METRICS.md) and run files (docs/HDF5.md): one run
// group /runs/<name> in a staged file of a given kind, optionally appended to an existing file
// (rebuilt crash-safely: the old runs copied into a new staged file, renamed over the old one).
#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <string>

#include "calibration/windows.h"
#include "core/text.h"
#include "model/model.h"
#include "metrics/reference_cache.h"
#include "store/file.h"
#include "tools/cli.h"

namespace pc::cli {

struct TextWindows {
  TextSource text;
  TokenWindows windows;
};

// Reads --text, tokenizes it with `tokenizer_dir`'s tokenizer, cuts windows. seq_len 0: the
// model's context. Errors name the option and the counts (text shorter than one window).
TextWindows LoadTextWindows(const std::string& text_path, const std::string& text_field, int64_t seq_len,
                            int64_t max_windows, const ModelConfig& config, const std::string& tokenizer_dir);

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

// --cache DIR, --no-cache, --cache-limit SIZE (the reference cache, docs/METRICS.md).
struct CacheFlags {
  std::string dir, limit = "64G";
  bool none = false;
};
void AddCacheOptions(po::options_description& desc, CacheFlags& flags);
CacheOptions ToCacheOptions(const CacheFlags& flags);

// The default run name: the folder's name.
std::string DefaultRunName(const std::string& model_dir);

// The compressed model's compression record (config.json "perpcomp_compression") as JSON text,
// or "" when absent.
std::string CompressionRecord(const Model& model);

}  // namespace pc::cli
