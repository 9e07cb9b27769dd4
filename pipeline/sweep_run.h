// pipeline/sweep_run.h — `perpcomp sweep`: every run of a sweep file compressed, measured and
// evaluated against one reference model, one run file per run, a results file rebuilt after
// each run; resumable, crash-safe and sharded (docs/SWEEPS.md, docs/HDF5.md "sweep-run").
//
// The work folder (default <out without .h5>.work/) holds:
//   sweep.json        the conventions of the sweep (a later invocation must match them)
//   reference.h5      the reference's perplexity and minimal-pair scores (computed once)
//   runs/<i>-<run>.h5 one complete run each (staged: present only when complete)
//   models/<run>/     the compressed checkpoint while its run is measured (kept with --keep-models)
//   .lock             held (flock) while a sweep runs in the folder
// The reference's activations and logits come from the metrics reference cache: one entry
// (model, windows, dtype) serves every run of the sweep.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "metrics/minimal_pairs.h"
#include "metrics/reference_cache.h"
#include "pipeline/compress_run.h"
#include "recipes/sweep_spec.h"

namespace pc::pipeline {

// A sweep file read and expanded; a run's index is its position in `runs`.
struct SweepPlan {
  std::string path;  // as given
  std::string yaml;  // the file's text (recorded as sweep_yaml)
  recipes::SweepSpec spec;
  std::vector<recipes::SweepRun> runs;
};
SweepPlan LoadSweepPlan(const std::string& path);

// Indices of the runs of shard k of n (index % n == k), in order.
std::vector<size_t> ShardIndices(size_t runs, int k, int n);

// The recipe's main method parameters with the method's defaults filled in (the `params`
// attribute). Errors (unknown method or parameter) name the recipe file:line.
nlohmann::json MainMethodParams(const recipes::RecipeSpec& recipe);

// What the sweep measures on: read by the caller (the command line) before the sweep starts.
struct SweepInputs {
  std::string model_dir;
  CalibOverrides calib;           // --calib and its overrides
  std::string eval_path;          // --eval
  std::string eval_sha256;        // of the file's bytes
  at::Tensor windows;             // (W, T) int64 token windows of the evaluation text
  int64_t stream_tokens = 0;      // tokens in the whole evaluation stream
  std::vector<std::string> pair_files;  // resolved --pairs files, in order
  std::vector<MinimalPair> pairs;       // their pairs (the first max_pairs of each file when > 0)
  int64_t max_pairs = 0;                // --max-pairs (0: every pair)
  std::string lm_eval_dir;              // --import-lm-eval: <dir>/<run>.json imported per run
};

struct SweepOptions {
  std::string out;             // results file
  std::string work;            // "" : DefaultWorkDir(out)
  int shard_k = 0, shard_n = 1;
  bool sharded = false;        // --shard given (the results' shard attribute)
  bool keep_models = false;
  bool per_token = false;
  int64_t batch = 0;           // windows per forward (0: automatic)
  CacheOptions cache;          // the reference cache (dir "" : none)
  // Fault injection for the crash tests: "<run>:<point>[:throw]" sends SIGKILL to this process
  // (or, with ":throw", fails the run with an error) at `point` of run `run`: compress, measure,
  // eval (as the stage starts), measure-block-<l> (block l measured), write-run (the run file
  // half-written), write-results (the results file half-rebuilt).
  std::string crash_at;
  // Runs whose earlier attempt failed (run file status "failed") are run again; otherwise they
  // are reported and left alone.
  bool retry_failed = false;
  // Runs `run`; returns false with the message in *error when it threw. The library does not
  // catch; tools/ passes a guard that does (a run that throws is then recorded as failed and the
  // sweep goes on). Empty: an exception ends the sweep.
  std::function<bool(const std::function<void()>& run, std::string* error)> guard;
};

// "<out without .h5>.work" beside `out`.
std::string DefaultWorkDir(const std::string& out);

// The conventions JSON (docs/HDF5.md "sweep-run"): model, model_hash, eval_text, eval_sha256,
// seq_len, windows, pairs, calib, metrics_conventions, perpcomp. Paths are absolute.
nlohmann::json SweepConventions(const SweepInputs& in, const CacheOptions& cache);

struct SweepSummary {
  size_t total = 0;      // runs of the whole sweep
  size_t in_shard = 0;   // runs of this shard
  size_t skipped = 0;    // finished earlier
  size_t done = 0;       // finished now
  size_t restored = 0;   // of `skipped`: run files restored from the results file (--out)
  // Failed runs (name, message): now, and earlier ones not retried.
  std::vector<std::pair<std::string, std::string>> failed;
  size_t failed_now = 0;
  std::string work;
};

// Runs the sweep (the shard's runs not yet finished) under `conventions`
// (SweepConventions(in, o.cache)). Refuses, before any work: a work folder in use by another
// sweep (lock), or made under other conventions (naming the first difference and how to start
// over); a recipe that does not resolve against the model. Every finished run rebuilds `o.out`.
// Run files and the reference file the work folder lacks are first restored from an existing
// `o.out` of the same conventions (its complete runs of this shard with the same recipe), so a
// sweep resumes from its results file alone.
SweepSummary RunSweep(const SweepPlan& plan, const SweepInputs& in, const nlohmann::json& conventions,
                      const SweepOptions& o);

// Run files under <work>/runs (complete ones; temporary files are not listed).
std::vector<std::string> ListRunFiles(const std::string& work);

}  // namespace pc::pipeline
