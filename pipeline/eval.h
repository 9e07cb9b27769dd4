// pipeline/eval.h — `perpcomp eval` end to end: perplexity on a text; with a reference also ΔNLL,
// KL(reference ‖ model) and top-1 agreement; minimal-pair accuracy; lm-evaluation-harness scores
// recorded. The result as the `--json` object (keys by docs/METRICS.md; later stages add keys,
// never rename them) and, with `out`, an "eval" HDF5 file (docs/HDF5.md).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "metrics/lm_eval_import.h"
#include "metrics/logit_compare.h"
#include "metrics/minimal_pairs.h"
#include "metrics/perplexity.h"
#include "metrics/reference_cache.h"

namespace pc::pipeline {

// What to evaluate; plain data, checked once by RunEval before any work. Errors name the
// command-line options the fields come from.
struct EvalRunOptions {
  std::string model;                    // --model: Hugging Face folder
  std::string dtype = "f32";            // --dtype: f32 | bf16
  std::string text;                     // --text: plain UTF-8 or JSON lines ("": no perplexity)
  std::string text_field = "text";      // --text-field
  int64_t seq_len = 0;                  // --seq-len (0: 2048 capped at the model's context)
  int64_t max_windows = 0;              // --max-windows (0: all)
  int64_t batch = 0;                    // --batch: windows per forward (0: automatic)
  std::string reference;                // --reference: adds delta NLL, KL and top-1 agreement (needs text)
  CacheOptions cache;                   // the reference cache (--cache, --no-cache, --cache-limit)
  std::vector<std::string> pair_specs;  // --pairs: BLiMP .jsonl file, folder of them, or blimp-sva
  std::string shared_data_dir;          // where blimp-sva is looked for ($PERPCOMP_SHARED/data)
  int64_t pair_batch_tokens = 8192;     // --pair-batch-tokens
  std::string pair_prefix;              // --pair-prefix
  std::string lm_eval;                  // --import-lm-eval: results JSON to record
  std::string lm_eval_reference;        // --lm-eval-reference: the reference's results JSON
  std::string out;                      // --out: "eval" HDF5 file ("": none)
  std::string run;                      // --run ("": the model folder's name)
  bool overwrite = false;               // --overwrite
  bool append = false;                  // --append
  int64_t memory_limit = 0;             // --max-memory in bytes (0: the machine's available memory)
};

// Wall time of the parts of a run (the `seconds` JSON object; `seconds_*` attributes of the run).
struct EvalSeconds {
  double tokenize = 0;  // reading --text, tokenizing it and cutting the windows
  double load = 0;      // loading the model (without the blocks a block-by-block run loads as it goes)
  double forward = 0;   // perplexity (and the reference comparison) and the minimal pairs' scoring
  double total = 0;     // the whole run up to its results, before --out is written
};

struct EvalRunResult {
  bool has_text = false;
  PerplexityResult ppl;                          // with text
  std::string text_sha256;                       // with text
  std::optional<DownstreamSummary> downstream;   // with a reference
  bool has_pairs = false;
  PairAccuracy pairs;                            // with minimal pairs
  std::optional<LmEvalResults> lm_eval;          // with --import-lm-eval
  std::vector<LmEvalDrop> lm_eval_drops;         // with --lm-eval-reference
  std::string run;                               // the run written to `out` ("" without)
  EvalSeconds seconds;
  nlohmann::json json;                           // the --json object (docs/METRICS.md)
};

// Reads the inputs that can be wrong first (lm-eval files, pairs, text, tokenizers), checks the
// memory estimate (pipeline/memory_estimate.h) against `memory_limit`, loads the model, evaluates,
// writes `out` when given.
EvalRunResult RunEval(const EvalRunOptions& opts);

}  // namespace pc::pipeline
