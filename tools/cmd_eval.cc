// perpcomp eval --model DIR [--text FILE [--seq-len N] [--max-windows K] [--reference DIR]]
//   [--pairs FILE|DIR|blimp-sva ... [--pair-prefix " "]]
//   [--import-lm-eval FILE.json [--lm-eval-reference REF.json]] [--out FILE.h5 [--run NAME]] [--json]
// Perplexity on a text; with --reference also ΔNLL, KL(reference ‖ model) and top-1 agreement;
// minimal-pair accuracy; lm-evaluation-harness scores recorded. The run is pipeline/eval.h; here
// the options, the call and the printing. JSON keys by docs/METRICS.md (later stages add keys,
// never rename them); everything into a "eval" HDF5 file with --out.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "core/strings.h"
#include "pipeline/eval.h"
#include "tools/cli.h"
#include "tools/model_options.h"
#include "tools/run_io.h"

namespace pc::cli {

namespace {

void PrintAccuracy(const char* title, const std::vector<AccuracyRow>& rows) {
  std::printf("\n%-48s %8s %8s %6s %9s\n", title, "pairs", "correct", "ties", "accuracy");
  for (const auto& r : rows) {
    std::printf("%-48s %8lld %8lld %6lld %9.4f\n", r.group.empty() ? "(none)" : r.group.c_str(),
                static_cast<long long>(r.pairs), static_cast<long long>(r.correct), static_cast<long long>(r.ties),
                r.accuracy);
  }
}

}  // namespace

int RunEval(const std::vector<std::string>& args) {
  CommonOptions common;
  pipeline::ModelOptions mo;
  CacheFlags cache;
  pipeline::EvalRunOptions o;
  std::string max_memory;
  bool json = false;
  po::options_description desc("options");
  AddModelOptions(desc, mo);
  desc.add_options()
    ("text", po::value<std::string>(&o.text), "evaluation text: plain UTF-8 or JSON lines (*.jsonl)")
    ("text-field", po::value<std::string>(&o.text_field)->default_value("text"), "JSON-lines field holding the text")
    ("seq-len", po::value<int64_t>(&o.seq_len)->default_value(0), "window length in tokens (0: 2048 capped at the model's context)")
    ("max-windows", po::value<int64_t>(&o.max_windows)->default_value(0), "evaluate the first K windows (0: all)")
    ("batch", po::value<int64_t>(&o.batch)->default_value(0), "windows per forward (0: automatic)")
    ("reference", po::value<std::string>(&o.reference), "reference model folder: adds delta NLL, KL and top-1 agreement")
    ("pairs", po::value<std::vector<std::string>>(&o.pair_specs)->composing(),
     "minimal pairs: BLiMP .jsonl file, folder of them, or blimp-sva (repeatable)")
    ("pair-batch-tokens", po::value<int64_t>(&o.pair_batch_tokens)->default_value(8192), "padded tokens per minimal-pair forward")
    ("pair-prefix", po::value<std::string>(&o.pair_prefix)->default_value(""),
     "text before every minimal-pair sentence (\" \": lm-eval's BLiMP scoring, see docs/METRICS.md)")
    ("import-lm-eval", po::value<std::string>(&o.lm_eval), "record an lm-evaluation-harness results JSON")
    ("lm-eval-reference", po::value<std::string>(&o.lm_eval_reference),
     "the reference model's lm-eval results JSON: report the drop of every shared score")
    ("out", po::value<std::string>(&o.out), "write everything to this HDF5 file (kind \"eval\")")
    ("run", po::value<std::string>(&o.run), "run name in --out (default: the model folder's name)")
    ("overwrite", po::bool_switch(&o.overwrite), "replace an existing --out (with --append: a run of the same name)")
    ("append", po::bool_switch(&o.append), "add this run to an existing eval file (rebuilt crash-safely)")
    ("json", po::bool_switch(&json), "print one JSON object")
    ("max-memory", po::value<std::string>(&max_memory),
     "refuse to start when the estimated peak memory exceeds SIZE (e.g. 4G, 512M, 1.5GiB)");
  AddCacheOptions(desc, cache);
  AddCommonOptions(desc, common);
  po::variables_map vm;
  if (!Parse("eval", "--model DIR --text FILE [--seq-len N] [--reference DIR] [--pairs P] [options]", desc, args, vm,
             nullptr, &common)) {
    return 0;
  }
  o.model = mo.model;
  o.dtype = mo.dtype;
  o.memory_limit = max_memory.empty() ? 0 : ParseBytes(max_memory, "--max-memory");
  if (!o.reference.empty()) o.cache = ToCacheOptions(cache);  // the cache holds the reference's outputs
  o.shared_data_dir = SharedDataDir();
  const pipeline::EvalRunResult r = pipeline::RunEval(o);

  if (json) {
    std::cout << r.json.dump() << std::endl;
    return 0;
  }
  if (r.has_text) {
    const PerplexityResult& ppl = r.ppl;
    std::printf("%s on %s: ppl %.4f (mean NLL %.5f nats over %lld tokens, %lld windows x %lld, text sha256 %.12s…)\n",
                o.model.c_str(), o.text.c_str(), ppl.ppl, ppl.mean_nll, (long long)ppl.tokens,
                (long long)ppl.windows, (long long)ppl.seq_len, r.text_sha256.c_str());
  }
  if (r.downstream) {
    const DownstreamSummary& d = *r.downstream;
    std::printf("against %s: ppl %.4f, delta NLL %+.5f ± %.5f nats; KL mean %.6f ± %.6f (p50 %.6f, p90 %.6f, p99 "
                "%.6f); top-1 agreement %.4f (± standard errors over %lld windows)\n",
                o.reference.c_str(), d.ref_ppl, d.delta_nll, d.delta_nll_se, d.kl_mean, d.kl_mean_se, d.kl_p50,
                d.kl_p90, d.kl_p99, d.top1_agreement, static_cast<long long>(d.windows));
  }
  if (r.has_pairs) {
    const PairAccuracy& accuracy = r.pairs;
    PrintAccuracy("minimal pairs by file", accuracy.by_file);
    PrintAccuracy("by linguistics_term", accuracy.by_term);
    std::printf("all: %lld pairs, accuracy %.4f (%lld ties counted as wrong)\n",
                static_cast<long long>(accuracy.overall.pairs), accuracy.overall.accuracy,
                static_cast<long long>(accuracy.overall.ties));
  }
  if (r.lm_eval) std::printf("recorded %zu lm-eval scores from %s\n", r.lm_eval->scores.size(), o.lm_eval.c_str());
  if (!r.lm_eval_drops.empty()) {
    std::printf("\nlm-eval against %s (drop > 0: worse than the reference)\n%-56s %-18s %12s %12s %12s\n",
                o.lm_eval_reference.c_str(), "task", "metric", "value", "reference", "drop");
    for (const auto& d : r.lm_eval_drops) {
      std::printf("%-56s %-18s %12.6g %12.6g %+12.6g\n", d.task.c_str(),
                  (d.filter.empty() ? d.metric : d.metric + "," + d.filter).c_str(), d.value, d.reference, d.drop);
    }
  }
  if (!r.run.empty()) std::printf("wrote %s (run '%s')\n", o.out.c_str(), r.run.c_str());
  return 0;
}

}  // namespace pc::cli
