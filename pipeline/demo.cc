#include "pipeline/demo.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <future>
#include <optional>

#include "calibration/windows.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/json_util.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/sha256.h"
#include "core/text.h"
#include "core/threads.h"
#include "metrics/minimal_pairs.h"
#include "metrics/pairs_file.h"
#include "metrics/perplexity.h"
#include "model/config.h"
#include "model/model.h"
#include "model/tokenizer/tokenizer.h"
#include "pipeline/compress_run.h"
#include "pipeline/run_io.h"
#include "pipeline/sweep_run.h"
#include "reports/ranking_analysis.h"
#include "reports/ranking_report.h"
#include "reports/sweep_results.h"
#include "store/file.h"
#include "train/corpus.h"
#include "train/trainer.h"

namespace pc::pipeline {
namespace {

constexpr const char* kMarker = "perpcomp-demo.json";
constexpr int kDemoVersion = 1;  // bump when the demo's training recipe changes (invalidates the cache)

double Since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

std::string DefaultCache() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && *xdg) return fs::Join(xdg, "perpcomp");
  const char* home = std::getenv("HOME");
  return fs::Join(home != nullptr && *home ? home : ".", ".cache/perpcomp");
}

// Trains (or finds in the cache) one demo model.
DemoModel ModelFor(const std::string& label, const std::string& arch, const std::string& corpus,
                   const nlohmann::json& manifest, const DemoOptions& o, const std::string& cache) {
  TrainOptions t = DemoTrainOptions(arch, corpus, o.steps);
  nlohmann::json key = {{"demo", kDemoVersion}, {"arch", arch}, {"corpus", manifest["files"]},
                        {"vocab", t.vocab_size}, {"layers", t.layers}, {"hidden", t.hidden}, {"heads", t.heads},
                        {"context", t.context}, {"steps", t.steps}, {"batch", t.batch}, {"lr", t.lr},
                        {"rotary_pct", t.rotary_pct}, {"parallel_residual", t.parallel_residual}, {"seed", t.seed}};
  DemoModel m;
  m.label = label;
  m.arch = arch;
  m.dir = fs::Join(cache, "demo-models/" + label + "-" + Sha256Hex(key.dump()).substr(0, 16));
  if (!o.fresh && fs::Exists(fs::Join(m.dir, "config.json")) && fs::Exists(fs::Join(m.dir, "train_log.json"))) {
    m.cached = true;
    log::Info("demo", label, " model: cached at ", m.dir);
    return m;
  }
  log::Info("demo", "training the ", label, " model (", arch, ", ", t.layers, " layers, hidden ", t.hidden, ", ",
            t.steps, " steps x ", t.batch, " x ", t.context, " tokens)");
  fs::MakeDirs(fs::Parent(m.dir));
  t.out = m.dir;
  t.overwrite = true;
  t.show_progress = false;
  auto t0 = std::chrono::steady_clock::now();
  TrainModel(t);
  m.train_seconds = Since(t0);
  return m;
}

nlohmann::json Evaluate(const DemoModel& dm, const std::string& corpus) {
  auto model = Model::Load(dm.dir);
  auto tok = LoadTokenizer(dm.dir);
  TextSource valid = ReadTextSource(fs::Join(corpus, "valid.txt"));
  TokenWindows w = MakeWindows(TokenizeStream(*tok, valid.text), model->config().max_pos, 256, "valid.txt");
  PerplexityResult ppl = EvaluatePerplexity(*model, w.tokens);
  nlohmann::json log = LoadJsonFile(fs::Join(dm.dir, "train_log.json"));
  std::vector<MinimalPair> pairs;
  for (const auto& f : ResolvePairFiles(fs::Join(corpus, "pairs"), "")) {
    auto p = ReadMinimalPairs(f);
    pairs.insert(pairs.end(), p.begin(), p.end());
  }
  PairAccuracy acc = AggregatePairs(pairs, ScoreMinimalPairs(*model, *tok, pairs));
  nlohmann::json files = nlohmann::json::object();
  for (const auto& row : acc.by_file) files[row.group] = row.accuracy;
  return {{"model", dm.dir},
          {"architecture", dm.arch},
          {"parameters", model->ParameterCount()},
          {"valid_ppl", ppl.ppl},
          {"valid_mean_nll", ppl.mean_nll},
          {"valid_tokens", ppl.tokens},
          {"unigram_ppl", std::exp(log.value("unigram_valid_loss", NAN))},
          {"train_seconds", log.value("seconds", 0.0)},
          {"pairs", files},
          {"pairs_overall", acc.overall.accuracy}};
}

// The demo's main job: the sweep `plan` (read from `sweep_file`) on `model_dir` with the corpus as
// calibration, evaluation text and minimal pairs; results and the ranking report go into `staged_out` (final name `final_out`).
nlohmann::json RunDemoSweep(const SweepPlan& plan, const std::string& sweep_file, const std::string& model_dir,
                            const std::string& corpus_dir, const std::string& staged_out, const std::string& final_out) {
  SweepInputs in;
  in.model_dir = model_dir;
  in.calib.source = fs::Join(corpus_dir, "train.txt");
  in.calib.seq_len = 64;
  in.eval_path = fs::Join(corpus_dir, "valid.txt");
  TextWindows tw = LoadTextWindows(in.eval_path, "text", /*seq_len=*/64, /*max_windows=*/64,
                                   LoadModelConfig(model_dir), model_dir);
  in.windows = tw.windows.tokens;
  in.eval_sha256 = tw.text.sha256;
  in.stream_tokens = tw.windows.stream_tokens;
  in.pair_files = ResolvePairFiles(fs::Join(corpus_dir, "pairs"), "");
  for (const auto& f : in.pair_files) {
    auto p = ReadMinimalPairs(f);
    in.pairs.insert(in.pairs.end(), p.begin(), p.end());
  }
  SweepOptions o;
  const std::string sweep_dir = fs::Join(staged_out, "sweep");
  fs::MakeDirs(sweep_dir);
  o.out = fs::Join(sweep_dir, "results.h5");
  o.cache.dir = "";  // one reference, evaluated once inside the sweep
  log::Info("demo", "sweep ", plan.spec.name.value, ": ", sweep_file, " on the LayerNorm model");
  SweepSummary summary = RunSweep(plan, in, SweepConventions(in, o.cache), o);

  // Rank: which error metric predicts the downstream loss across the sweep's runs.
  reports::SweepResults results = reports::ReadSweepResults(o.out);
  reports::RankOptions ro;
  ro.threads = 1;
  ro.Validate();
  reports::RankingAnalysis analysis = reports::AnalyzeSweep(results, ro);
  reports::RankReport report = reports::BuildRankReport(results, analysis, {"perpcomp demo", store::CreatedBy()});
  const std::string report_dir = fs::Join(staged_out, "report");
  fs::MakeDirs(report_dir);
  for (const reports::ReportFile& f : report.files) fs::WriteFileAtomic(fs::Join(report_dir, f.name), f.content);
  return {{"sweep", plan.spec.name.value},
          {"runs", summary.done + summary.skipped},
          {"results", fs::Join(final_out, "sweep/results.h5")},
          {"report", fs::Join(final_out, "report/report.html")},
          {"headline", report.headline}};
}

}  // namespace

void DemoOptions::Validate() const {
  PC_CHECK(!out.empty(), "--out: an output folder is required");
  PC_CHECK(steps >= 1, "--steps ", steps, ": the demo models need at least one training step");
}

DemoResult RunDemo(const DemoOptions& o) {
  o.Validate();
  const auto t_start = std::chrono::steady_clock::now();
  const std::string cache = o.cache.empty() ? DefaultCache() : o.cache;
  // The sweep file is read and checked before anything is written.
  const std::string sweep_file = o.sweep.empty() ? fs::Join(ShippedRecipesDir(), "sweeps/demo.yaml") : o.sweep;
  std::optional<SweepPlan> plan;
  if (!o.skip_sweep) plan = LoadSweepPlan(sweep_file);
  // The output folder: a previous demo output is replaced; anything else needs --overwrite.
  bool previous = fs::Exists(fs::Join(o.out, kMarker));
  fs::StagedDir out(o.out, o.overwrite || previous, "--out");
  log::Info("demo", "writing into ", o.out, " (models cached under ", cache, ")");

  // 1. The synthetic corpus.
  corpus::CorpusOptions co;
  co.sentences = 120000;
  const std::string corpus_dir = fs::Join(out.path(), "corpus");
  nlohmann::ordered_json manifest = corpus::WriteCorpus(co, corpus_dir, false);

  // 2. Two small models, trained from nothing (or found in the cache), side by side: one
  //    thread each uses two cores better than two threads each on such small matrices.
  auto train = [&](const char* label, const char* arch) {
    SetThreads(1);
    QuietProgress quiet;
    return ModelFor(label, arch, corpus_dir, manifest, o, cache);
  };
  auto layernorm = std::async(std::launch::async, train, "layernorm", "gpt_neox");
  auto rmsnorm = std::async(std::launch::async, train, "rmsnorm", "llama");
  DemoResult r;
  r.out = o.out;
  r.summary = fs::Join(o.out, kMarker);
  r.models = {layernorm.get(), rmsnorm.get()};
  // 3. Held-out perplexity and minimal pairs, also side by side on one thread each.
  auto evaluate = [&](const DemoModel& m) {
    SetThreads(1);
    QuietProgress quiet;
    return Evaluate(m, corpus_dir);
  };
  auto eval0 = std::async(std::launch::async, evaluate, std::cref(r.models[0]));
  auto eval1 = std::async(std::launch::async, evaluate, std::cref(r.models[1]));
  r.models[0].eval = eval0.get();
  r.models[1].eval = eval1.get();
  SetThreads(0);

  // 4. The main job: the demo sweep on the LayerNorm model, ranked into an HTML report.
  r.sweep = nullptr;
  if (plan) r.sweep = RunDemoSweep(*plan, sweep_file, r.models[0].dir, corpus_dir, out.path(), o.out);

  r.seconds = Since(t_start);
  nlohmann::json summary = {{"demo_version", kDemoVersion}, {"corpus", manifest}, {"seconds", r.seconds},
                            {"cache", cache}, {"sweep", r.sweep}};
  for (const auto& m : r.models) summary["models"][m.label] = m.eval;
  fs::WriteFileAtomic(fs::Join(out.path(), kMarker), summary.dump(2) + "\n");
  out.Commit();
  return r;
}

}  // namespace pc::pipeline
