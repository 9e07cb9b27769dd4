#include "tools/demo.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <nlohmann/json.hpp>

#include "calibration/windows.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/json_util.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/sha256.h"
#include "core/strings.h"
#include "core/text.h"
#include "core/threads.h"
#include "metrics/minimal_pairs.h"
#include "metrics/perplexity.h"
#include "model/model.h"
#include "model/tokenizer/tokenizer.h"
#include "pipeline/compress_run.h"
#include "train/corpus.h"
#include "train/trainer.h"
#include "tools/demo_sweep.h"

namespace pc::cli {
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

struct DemoModel {
  std::string label;  // "layernorm" / "rmsnorm"
  std::string arch;
  std::string dir;
  bool cached = false;
  double train_seconds = 0;
  nlohmann::json eval;
};

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

}  // namespace

int RunDemoJob(const DemoOptions& o) {
  const auto t_start = std::chrono::steady_clock::now();
  const std::string cache = o.cache.empty() ? DefaultCache() : o.cache;
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
  std::vector<DemoModel> models = {layernorm.get(), rmsnorm.get()};
  // 3. Held-out perplexity and minimal pairs, also side by side on one thread each.
  auto evaluate = [&](const DemoModel& m) {
    SetThreads(1);
    QuietProgress quiet;
    return Evaluate(m, corpus_dir);
  };
  auto eval0 = std::async(std::launch::async, evaluate, std::cref(models[0]));
  auto eval1 = std::async(std::launch::async, evaluate, std::cref(models[1]));
  models[0].eval = eval0.get();
  models[1].eval = eval1.get();
  SetThreads(0);

  // 4. The main job: the demo sweep on the LayerNorm model, ranked into an HTML report.
  nlohmann::json sweep = nullptr;
  if (!o.skip_sweep) {
    sweep = RunDemoSweep(models[0].dir, corpus_dir, o.sweep.empty() ? fs::Join(pipeline::ShippedRecipesDir(), "sweeps/demo.yaml") : o.sweep,
                         out.path(), o.out);
  }

  nlohmann::json summary = {{"demo_version", kDemoVersion}, {"corpus", manifest}, {"seconds", Since(t_start)},
                            {"cache", cache}, {"sweep", sweep}};
  for (const auto& m : models) summary["models"][m.label] = m.eval;
  fs::WriteFileAtomic(fs::Join(out.path(), kMarker), summary.dump(2) + "\n");
  out.Commit();

  std::printf("\nperpcomp demo: done in %.0f s\n\n", Since(t_start));
  std::printf("%-10s %-9s %8s %10s %10s %8s %8s %8s\n", "model", "arch", "params", "valid ppl", "unigram", "0 attr",
              "1 attr", "2 attr");
  for (const auto& m : models) {
    const auto& e = m.eval;
    auto acc = [&](const char* f) { return e["pairs"].value(f, NAN) * 100; };
    std::printf("%-10s %-9s %8lld %10.2f %10.1f %7.1f%% %7.1f%% %7.1f%%\n", m.label.c_str(), m.arch.c_str(),
                (long long)e["parameters"].get<int64_t>(), e["valid_ppl"].get<double>(),
                e["unigram_ppl"].get<double>(), acc("agreement_0_attractors"), acc("agreement_1_attractor"),
                acc("agreement_2_attractors"));
  }
  std::printf("\n  corpus:   %s/corpus (train.txt, valid.txt, pairs/, depths.jsonl)\n", o.out.c_str());
  for (const auto& m : models) std::printf("  %-9s %s%s\n", (m.label + ":").c_str(), m.dir.c_str(), m.cached ? " (cached)" : "");
  if (!sweep.is_null()) PrintDemoSweep(sweep);
  std::printf("  summary:  %s/%s\n", o.out.c_str(), kMarker);
  return 0;
}

}  // namespace pc::cli
