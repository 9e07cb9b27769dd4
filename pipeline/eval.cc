#include "pipeline/eval.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include "core/error.h"
#include "core/fs.h"
#include "core/log.h"
#include "metrics/pairs_file.h"
#include "metrics/reference_eval.h"
#include "metrics/results_h5.h"
#include "pipeline/run_io.h"
#include "pipeline/memory_estimate.h"
#include "store/file.h"

namespace pc::pipeline {

namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

nlohmann::json AccuracyJson(const std::vector<AccuracyRow>& rows) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& r : rows) {
    j[r.group.empty() ? "(none)" : r.group] = {
        {"accuracy", r.accuracy}, {"pairs", r.pairs}, {"correct", r.correct}, {"ties", r.ties}};
  }
  return j;
}

}  // namespace

EvalRunResult RunEval(const EvalRunOptions& o) {
  const Clock::time_point start = Clock::now();
  PC_CHECK(!o.text.empty() || !o.pair_specs.empty() || !o.lm_eval.empty(),
           "eval: give --text (perplexity), --pairs (minimal pairs) or --import-lm-eval");
  PC_CHECK(o.reference.empty() || !o.text.empty(),
           "--reference needs --text (KL and delta NLL are measured on its windows)");
  PC_CHECK(o.batch >= 0, "--batch must not be negative");
  std::optional<RunOutputOptions> ro;
  if (!o.out.empty()) {
    ro = RunOutputOptions{o.out, store::kind::kEval, o.run.empty() ? DefaultRunName(o.model) : o.run, o.overwrite,
                          o.append};
    std::vector<std::pair<std::string, std::string>> inputs = {
        {"--model", o.model}, {"--reference", o.reference}, {"--text", o.text}, {"--import-lm-eval", o.lm_eval}};
    for (const auto& p : o.pair_specs) inputs.push_back({"--pairs", p});
    fs::CheckNotAnInput(o.out, "--out", inputs);
    CheckRunOutput(*ro);
  } else {
    PC_CHECK(o.run.empty() && !o.append, "--run and --append need --out");
  }
  EvalRunResult res;
  // Inputs that can be wrong are read before the model is loaded.
  if (!o.lm_eval.empty()) res.lm_eval = ReadLmEvalResults(o.lm_eval);
  PC_CHECK(o.lm_eval_reference.empty() || res.lm_eval, "eval: --lm-eval-reference needs --import-lm-eval");
  if (!o.lm_eval_reference.empty()) {
    res.lm_eval_drops = CompareLmEvalResults(*res.lm_eval, ReadLmEvalResults(o.lm_eval_reference));
  }
  std::vector<MinimalPair> pairs;
  for (const auto& f : ResolvePairSpecs(o.pair_specs, o.shared_data_dir)) {
    std::vector<MinimalPair> p = ReadMinimalPairs(f);
    pairs.insert(pairs.end(), p.begin(), p.end());
  }
  res.has_pairs = !pairs.empty();
  // Sentences longer than the context are refused now, and the longest counts in the estimate.
  const int64_t longest_pair =
      pairs.empty() ? 0 : CheckPairLengths(*LoadModelTokenizer(o.model), pairs, LoadModelConfig(o.model).max_pos,
                                             o.pair_prefix);
  std::optional<TextWindows> tw;
  if (!o.text.empty()) {
    const Clock::time_point t = Clock::now();
    tw = LoadTextWindows(o.text, o.text_field, o.seq_len, o.max_windows, LoadModelConfig(o.model), o.model);
    res.seconds.tokenize = SecondsSince(t);
  }
  res.has_text = tw.has_value();
  if (!o.reference.empty()) CheckSameTokenizer(o.model, "model", o.reference, o.text);

  const RunDTypes dtypes = ResolveDTypes(o.dtype);
  if (tw || !pairs.empty()) {
    const ModelConfig config = LoadModelConfig(o.model);
    EvalMemoryOptions eo;
    eo.windows = tw ? tw->windows.tokens.size(0) : 1;
    eo.seq_len = tw ? tw->windows.tokens.size(1) : 1;
    eo.batch = tw ? o.batch : 1;
    eo.weight_bytes = dtypes.weight_bytes;
    eo.compute_bytes = dtypes.compute_bytes;
    eo.disk_bytes = DiskWeightBytes(config);
    eo.reference = !o.reference.empty();
    eo.per_token = ro.has_value();
    eo.text_bytes = tw ? fs::FileSize(o.text) : 0;
    eo.pair_tokens = pairs.empty() ? 0 : std::max(o.pair_batch_tokens, longest_pair);
    const MemoryEstimate memory = EstimateEval(config, eo);
    log::Verbose("eval", memory.Describe(8));
    CheckMemoryFits(memory, o.memory_limit,
                             "reduce --batch, --max-windows or --pair-batch-tokens, or use --dtype bf16");
  }

  std::unique_ptr<Model> model;
  // Perplexity and the comparison with the reference run block by block (metrics/block_stream.h);
  // minimal pairs, of many lengths, run the whole forward and need every block resident.
  ModelOptions mo{o.model, o.dtype, /*load_blocks=*/!pairs.empty(), /*load_head=*/!pairs.empty()};
  if (tw || !pairs.empty()) {
    const Clock::time_point t = Clock::now();
    model = LoadModel(mo);
    res.seconds.load = SecondsSince(t);
  }
  const Clock::time_point forward_start = Clock::now();
  std::optional<ReferenceEvalResult> vs;
  if (tw) {
    if (!o.reference.empty()) {
      ReferenceEvalOptions eo;
      eo.reference_dir = o.reference;
      eo.dtype = model->dtype();
      eo.batch = o.batch;
      eo.keep_per_token = ro.has_value();
      eo.cache = o.cache;
      eo.text_sha256 = tw->text.sha256;
      eo.model_name = "model '" + o.model + "'";
      eo.release_embeddings = pairs.empty();  // the models run once: embeddings, blocks, heads in turn
      vs = EvaluateAgainstReference(*model, tw->windows.tokens, eo);
      res.ppl = vs->model;
      res.downstream = vs->downstream;
    } else {
      res.ppl = EvaluatePerplexity(*model, tw->windows.tokens, o.batch, /*keep_token_nll=*/ro.has_value(),
                                   /*release_embedding=*/pairs.empty());
    }
    res.text_sha256 = tw->text.sha256;
  }
  std::vector<PairScore> scores;
  if (!pairs.empty()) {
    auto tok = LoadModelTokenizer(o.model);
    PairScoringOptions scoring;
    scoring.max_batch_tokens = o.pair_batch_tokens;
    scoring.prefix = o.pair_prefix;
    scores = ScoreMinimalPairs(*model, *tok, pairs, scoring);
    res.pairs = AggregatePairs(pairs, scores);
  }
  if (tw || !pairs.empty()) res.seconds.forward = SecondsSince(forward_start);
  res.seconds.total = SecondsSince(start);

  // The --json object; the text keys are also the run's attributes.
  nlohmann::json& j = res.json;
  const PerplexityResult& ppl = res.ppl;
  if (tw) {
    j = {{"ppl", ppl.ppl},
         {"mean_nll", ppl.mean_nll},
         {"tokens", ppl.tokens},
         {"windows", ppl.windows},
         {"seq_len", ppl.seq_len},
         {"text_sha256", tw->text.sha256},
         {"text", o.text},
         {"stream_tokens", tw->windows.stream_tokens}};
  }
  j["model"] = o.model;
  j["dtype"] = o.dtype;
  j["compute_dtype"] = dtypes.compute_name;
  if (vs) {
    j["reference"] = o.reference;
    j.update(DownstreamJson(vs->downstream));
    j["reference_cache_hit"] = vs->cache_hit;
  }
  if (!pairs.empty()) {
    const PairAccuracy& accuracy = res.pairs;
    j["pairs"] = {{"accuracy", accuracy.overall.accuracy},
                  {"pairs", accuracy.overall.pairs},
                  {"correct", accuracy.overall.correct},
                  {"ties", accuracy.overall.ties},
                  {"files", AccuracyJson(accuracy.by_file)},
                  {"terms", AccuracyJson(accuracy.by_term)}};
  }
  if (res.lm_eval) {
    nlohmann::json le = nlohmann::json::object();
    for (const auto& s : res.lm_eval->scores) {
      le[s.task][s.filter.empty() ? s.metric : s.metric + "," + s.filter] = s.value;
    }
    j["lm_eval"] = le;
    if (!res.lm_eval_drops.empty()) {
      nlohmann::json drops = nlohmann::json::object();
      for (const auto& d : res.lm_eval_drops) {
        drops[d.task][d.filter.empty() ? d.metric : d.metric + "," + d.filter] = {
            {"value", d.value}, {"reference", d.reference}, {"drop", d.drop}, {"lower_is_better", d.lower_is_better}};
      }
      j["lm_eval_drop"] = drops;
      j["lm_eval_reference"] = o.lm_eval_reference;
    }
  }
  j["seconds"] = {{"tokenize", res.seconds.tokenize},
                  {"load", res.seconds.load},
                  {"forward", res.seconds.forward},
                  {"total", res.seconds.total}};

  if (ro) {
    RunOutput output = StartRunOutput(*ro);
    nlohmann::json attrs = {{"run", ro->run}, {"model", o.model}, {"dtype", o.dtype},
                            {"compute_dtype", dtypes.compute_name},
                            {"metrics_conventions", kMetricsConventionsVersion},
                            {"seconds_tokenize", res.seconds.tokenize}, {"seconds_load", res.seconds.load},
                            {"seconds_forward", res.seconds.forward}, {"seconds_total", res.seconds.total}};
    if (model) {
      std::string record = CompressionRecord(*model);
      if (!record.empty()) attrs["compression"] = record;
    }
    if (tw) {
      for (const char* k :
           {"ppl", "mean_nll", "tokens", "windows", "seq_len", "text_sha256", "text", "stream_tokens"}) {
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
        attrs["reference"] = o.reference;
        write("nll_ref", vs->nll_ref);
        write("kl", vs->kl);
        at::Tensor t1 = vs->top1.contiguous();
        g.WriteArray("top1", t1.data_ptr<uint8_t>(), {t1.size(0), t1.size(1)}, z);
        WriteDownstream(output.run.CreateGroup("downstream"), vs->downstream);
      }
    }
    SetAttrs(output.run, attrs);
    if (!pairs.empty()) WritePairs(output.run.CreateGroup("pairs"), pairs, scores, res.pairs);
    if (res.lm_eval) WriteLmEval(output.run.CreateGroup("lm_eval"), *res.lm_eval);
    output.writer.Commit();
    j["out"] = o.out;
    j["run"] = ro->run;
    res.run = ro->run;
  }
  return res;
}

}  // namespace pc::pipeline
