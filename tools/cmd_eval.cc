// perpcomp eval --model DIR [--text FILE [--seq-len N] [--max-windows K] [--reference DIR]]
//   [--pairs FILE|DIR|blimp-sva ... [--pair-prefix " "]]
//   [--import-lm-eval FILE.json [--lm-eval-reference REF.json]] [--out FILE.h5 [--run NAME]] [--json]
// Perplexity on a text; with --reference also ΔNLL, KL(reference ‖ model) and top-1 agreement;
// minimal-pair accuracy; lm-evaluation-harness scores recorded. JSON keys by docs/METRICS.md
// (later stages add keys, never rename them); everything into a "eval" HDF5 file with --out.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/error.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/strings.h"
#include "core/tensor_util.h"
#include "metrics/lm_eval_import.h"
#include "metrics/minimal_pairs.h"
#include "metrics/perplexity.h"
#include "metrics/reference_eval.h"
#include "metrics/results_h5.h"
#include "recipes/memory_estimate.h"
#include "tools/cli.h"
#include "tools/model_options.h"
#include "tools/run_io.h"

namespace pc::cli {

namespace {

nlohmann::json AccuracyJson(const std::vector<AccuracyRow>& rows) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& r : rows) {
    j[r.group.empty() ? "(none)" : r.group] = {
        {"accuracy", r.accuracy}, {"pairs", r.pairs}, {"correct", r.correct}, {"ties", r.ties}};
  }
  return j;
}

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
  ModelOptions mo;
  CacheFlags cache;
  std::string text_path, text_field, reference, lm_eval_path, lm_eval_ref_path, pair_prefix, out, run, max_memory;
  std::vector<std::string> pair_specs;
  int64_t seq_len = 0, max_windows = 0, batch = 0, pair_batch_tokens = 8192;
  bool json = false, overwrite = false, append = false;
  po::options_description desc("options");
  AddModelOptions(desc, mo);
  desc.add_options()
    ("text", po::value<std::string>(&text_path), "evaluation text: plain UTF-8 or JSON lines (*.jsonl)")
    ("text-field", po::value<std::string>(&text_field)->default_value("text"), "JSON-lines field holding the text")
    ("seq-len", po::value<int64_t>(&seq_len)->default_value(0), "window length in tokens (0: 2048 capped at the model's context)")
    ("max-windows", po::value<int64_t>(&max_windows)->default_value(0), "evaluate the first K windows (0: all)")
    ("batch", po::value<int64_t>(&batch)->default_value(0), "windows per forward (0: automatic)")
    ("reference", po::value<std::string>(&reference), "reference model folder: adds delta NLL, KL and top-1 agreement")
    ("pairs", po::value<std::vector<std::string>>(&pair_specs)->composing(),
     "minimal pairs: BLiMP .jsonl file, folder of them, or blimp-sva (repeatable)")
    ("pair-batch-tokens", po::value<int64_t>(&pair_batch_tokens)->default_value(8192), "padded tokens per minimal-pair forward")
    ("pair-prefix", po::value<std::string>(&pair_prefix)->default_value(""),
     "text before every minimal-pair sentence (\" \": lm-eval's BLiMP scoring, see docs/METRICS.md)")
    ("import-lm-eval", po::value<std::string>(&lm_eval_path), "record an lm-evaluation-harness results JSON")
    ("lm-eval-reference", po::value<std::string>(&lm_eval_ref_path),
     "the reference model's lm-eval results JSON: report the drop of every shared score")
    ("out", po::value<std::string>(&out), "write everything to this HDF5 file (kind \"eval\")")
    ("run", po::value<std::string>(&run), "run name in --out (default: the model folder's name)")
    ("overwrite", po::bool_switch(&overwrite), "replace an existing --out (with --append: a run of the same name)")
    ("append", po::bool_switch(&append), "add this run to an existing eval file (rebuilt crash-safely)")
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
  PC_CHECK(!text_path.empty() || !pair_specs.empty() || !lm_eval_path.empty(),
           "eval: give --text (perplexity), --pairs (minimal pairs) or --import-lm-eval");
  PC_CHECK(reference.empty() || !text_path.empty(), "--reference needs --text (KL and delta NLL are measured on its windows)");
  PC_CHECK(batch >= 0, "--batch must not be negative");
  const int64_t memory_limit = max_memory.empty() ? 0 : ParseBytes(max_memory, "--max-memory");
  std::optional<RunOutputOptions> ro;
  if (!out.empty()) {
    ro = RunOutputOptions{out, store::kind::kEval, run.empty() ? DefaultRunName(mo.model) : run, overwrite, append};
    std::vector<std::pair<std::string, std::string>> inputs = {
        {"--model", mo.model}, {"--reference", reference}, {"--text", text_path}, {"--import-lm-eval", lm_eval_path}};
    for (const auto& p : pair_specs) inputs.push_back({"--pairs", p});
    fs::CheckNotAnInput(out, "--out", inputs);
    CheckRunOutput(*ro);
  } else {
    PC_CHECK(run.empty() && !append, "--run and --append need --out");
  }
  // Inputs that can be wrong are read before the model is loaded.
  std::optional<LmEvalResults> lm_eval;
  if (!lm_eval_path.empty()) lm_eval = ReadLmEvalResults(lm_eval_path);
  PC_CHECK(lm_eval_ref_path.empty() || lm_eval, "eval: --lm-eval-reference needs --import-lm-eval");
  std::vector<LmEvalDrop> lm_eval_drops;
  if (!lm_eval_ref_path.empty()) lm_eval_drops = CompareLmEvalResults(*lm_eval, ReadLmEvalResults(lm_eval_ref_path));
  std::vector<MinimalPair> pairs;
  for (const auto& f : ResolvePairSpecs(pair_specs, SharedDataDir())) {
    std::vector<MinimalPair> p = ReadMinimalPairs(f);
    pairs.insert(pairs.end(), p.begin(), p.end());
  }
  // Sentences longer than the context are refused now, and the longest counts in the estimate.
  const int64_t longest_pair =
      pairs.empty() ? 0 : CheckPairLengths(*LoadModelTokenizer(mo.model), pairs, LoadModelConfig(mo.model).max_pos,
                                             pair_prefix);
  std::optional<TextWindows> tw;
  if (!text_path.empty()) {
    tw = LoadTextWindows(text_path, text_field, seq_len, max_windows, LoadModelConfig(mo.model), mo.model);
  }
  if (!reference.empty()) CheckSameTokenizer(mo.model, "model", reference, text_path);

  if (tw || !pairs.empty()) {
    const ModelConfig config = LoadModelConfig(mo.model);
    recipes::EvalMemoryOptions eo;
    eo.windows = tw ? tw->windows.tokens.size(0) : 1;
    eo.seq_len = tw ? tw->windows.tokens.size(1) : 1;
    eo.batch = tw ? batch : 1;
    const at::ScalarType weights = ParseDType(mo.dtype);
    eo.weight_bytes = static_cast<int>(c10::elementSize(weights));
    eo.compute_bytes = static_cast<int>(c10::elementSize(ComputeDType(weights)));
    eo.disk_bytes = recipes::DiskWeightBytes(config);
    eo.reference = !reference.empty();
    eo.per_token = ro.has_value();
    eo.text_bytes = tw ? fs::FileSize(text_path) : 0;
    eo.pair_tokens = pairs.empty() ? 0 : std::max(pair_batch_tokens, longest_pair);
    const recipes::MemoryEstimate memory = recipes::EstimateEval(config, eo);
    log::Verbose("eval", memory.Describe(8));
    recipes::CheckMemoryFits(memory, memory_limit, "reduce --batch, --max-windows or --pair-batch-tokens, or use --dtype bf16");
  }

  nlohmann::json j;
  std::unique_ptr<Model> model;
  // Perplexity and the comparison with the reference run block by block (metrics/block_stream.h);
  // minimal pairs, of many lengths, run the whole forward and need every block resident.
  mo.load_blocks = !pairs.empty();
  mo.load_head = !pairs.empty();
  if (tw || !pairs.empty()) model = LoadModel(mo);
  PerplexityResult ppl;
  std::optional<ReferenceEvalResult> vs;
  if (tw) {
    if (!reference.empty()) {
      ReferenceEvalOptions eo;
      eo.reference_dir = reference;
      eo.dtype = model->dtype();
      eo.batch = batch;
      eo.keep_per_token = ro.has_value();
      eo.cache = ToCacheOptions(cache);
      eo.text_sha256 = tw->text.sha256;
      eo.model_name = "model '" + mo.model + "'";
      eo.release_embeddings = pairs.empty();  // the models run once: embeddings, blocks, heads in turn
      vs = EvaluateAgainstReference(*model, tw->windows.tokens, eo);
      ppl = vs->model;
    } else {
      ppl = EvaluatePerplexity(*model, tw->windows.tokens, batch, /*keep_token_nll=*/ro.has_value(),
                               /*release_embedding=*/pairs.empty());
    }
    j = {{"ppl", ppl.ppl},
         {"mean_nll", ppl.mean_nll},
         {"tokens", ppl.tokens},
         {"windows", ppl.windows},
         {"seq_len", ppl.seq_len},
         {"text_sha256", tw->text.sha256},
         {"text", text_path},
         {"stream_tokens", tw->windows.stream_tokens}};
  }
  j["model"] = mo.model;
  j["dtype"] = mo.dtype;
  j["compute_dtype"] = DTypeName(ComputeDType(ParseDType(mo.dtype)));
  if (vs) {
    const DownstreamSummary& d = vs->downstream;
    j["reference"] = reference;
    j.update(DownstreamJson(d));
    j["reference_cache_hit"] = vs->cache_hit;
  }
  std::vector<PairScore> scores;
  PairAccuracy accuracy;
  if (!pairs.empty()) {
    auto tok = LoadModelTokenizer(mo.model);
    PairScoringOptions scoring;
    scoring.max_batch_tokens = pair_batch_tokens;
    scoring.prefix = pair_prefix;
    scores = ScoreMinimalPairs(*model, *tok, pairs, scoring);
    accuracy = AggregatePairs(pairs, scores);
    j["pairs"] = {{"accuracy", accuracy.overall.accuracy},
                  {"pairs", accuracy.overall.pairs},
                  {"correct", accuracy.overall.correct},
                  {"ties", accuracy.overall.ties},
                  {"files", AccuracyJson(accuracy.by_file)},
                  {"terms", AccuracyJson(accuracy.by_term)}};
  }
  if (lm_eval) {
    nlohmann::json le = nlohmann::json::object();
    for (const auto& s : lm_eval->scores) {
      le[s.task][s.filter.empty() ? s.metric : s.metric + "," + s.filter] = s.value;
    }
    j["lm_eval"] = le;
    if (!lm_eval_drops.empty()) {
      nlohmann::json drops = nlohmann::json::object();
      for (const auto& d : lm_eval_drops) {
        drops[d.task][d.filter.empty() ? d.metric : d.metric + "," + d.filter] = {
            {"value", d.value}, {"reference", d.reference}, {"drop", d.drop}, {"lower_is_better", d.lower_is_better}};
      }
      j["lm_eval_drop"] = drops;
      j["lm_eval_reference"] = lm_eval_ref_path;
    }
  }

  if (ro) {
    RunOutput output = StartRunOutput(*ro);
    nlohmann::json attrs = {{"run", ro->run}, {"model", mo.model}, {"dtype", mo.dtype},
                            {"compute_dtype", DTypeName(ComputeDType(ParseDType(mo.dtype)))},
                            {"metrics_conventions", kMetricsConventionsVersion}};
    if (model) {
      std::string record = CompressionRecord(*model);
      if (!record.empty()) attrs["compression"] = record;
    }
    if (tw) {
      for (const char* k : {"ppl", "mean_nll", "tokens", "windows", "seq_len", "text_sha256", "text", "stream_tokens"}) {
        attrs[k] = j[k];
      }
      store::Group g = output.run.CreateGroup("per_token");
      const store::WriteOptions z = store::WriteOptions::Compressed();
      at::Tensor tokens = tw->windows.tokens.contiguous();
      g.WriteArray("tokens", tokens.data_ptr<int64_t>(), {tokens.size(0), tokens.size(1)}, z);
      auto write = [&](const char* name, const at::Tensor& t) {
        at::Tensor f = t.to(at::kFloat).contiguous();
        g.WriteArray(name, f.data_ptr<float>(), {f.size(0), f.size(1)}, z);
      };
      write("nll", ppl.token_nll);
      if (vs) {
        attrs["reference"] = reference;
        write("nll_ref", vs->nll_ref);
        write("kl", vs->kl);
        at::Tensor t1 = vs->top1.contiguous();
        g.WriteArray("top1", t1.data_ptr<uint8_t>(), {t1.size(0), t1.size(1)}, z);
        WriteDownstream(output.run.CreateGroup("downstream"), vs->downstream);
      }
    }
    SetAttrs(output.run, attrs);
    if (!pairs.empty()) WritePairs(output.run.CreateGroup("pairs"), pairs, scores, accuracy);
    if (lm_eval) WriteLmEval(output.run.CreateGroup("lm_eval"), *lm_eval);
    output.writer.Commit();
    j["out"] = out;
    j["run"] = ro->run;
  }

  if (json) {
    std::cout << j.dump() << std::endl;
    return 0;
  }
  if (tw) {
    std::printf("%s on %s: ppl %.4f (mean NLL %.5f nats over %lld tokens, %lld windows x %lld, text sha256 %.12s…)\n",
                mo.model.c_str(), text_path.c_str(), ppl.ppl, ppl.mean_nll, (long long)ppl.tokens,
                (long long)ppl.windows, (long long)ppl.seq_len, tw->text.sha256.c_str());
  }
  if (vs) {
    const DownstreamSummary& d = vs->downstream;
    std::printf("against %s: ppl %.4f, delta NLL %+.5f nats; KL mean %.6f (p50 %.6f, p90 %.6f, p99 %.6f); top-1 "
                "agreement %.4f\n",
                reference.c_str(), d.ref_ppl, d.delta_nll, d.kl_mean, d.kl_p50, d.kl_p90, d.kl_p99, d.top1_agreement);
  }
  if (!pairs.empty()) {
    PrintAccuracy("minimal pairs by file", accuracy.by_file);
    PrintAccuracy("by linguistics_term", accuracy.by_term);
    std::printf("all: %lld pairs, accuracy %.4f (%lld ties counted as wrong)\n",
                static_cast<long long>(accuracy.overall.pairs), accuracy.overall.accuracy,
                static_cast<long long>(accuracy.overall.ties));
  }
  if (lm_eval) std::printf("recorded %zu lm-eval scores from %s\n", lm_eval->scores.size(), lm_eval_path.c_str());
  if (!lm_eval_drops.empty()) {
    std::printf("\nlm-eval against %s (drop > 0: worse than the reference)\n%-56s %-18s %12s %12s %12s\n",
                lm_eval_ref_path.c_str(), "task", "metric", "value", "reference", "drop");
    for (const auto& d : lm_eval_drops) {
      std::printf("%-56s %-18s %12.6g %12.6g %+12.6g\n", d.task.c_str(),
                  (d.filter.empty() ? d.metric : d.metric + "," + d.filter).c_str(), d.value, d.reference, d.drop);
    }
  }
  if (ro) std::printf("wrote %s (run '%s')\n", out.c_str(), ro->run.c_str());
  return 0;
}

}  // namespace pc::cli
