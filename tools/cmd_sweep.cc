// perpcomp sweep --model DIR --sweep FILE.yaml --calib SPEC --eval FILE [--pairs SPEC] --out results.h5
//   [--work DIR] [--shard K/N] [--keep-models] [--dry-run] [--seq-len N] [--max-windows K] [--per-token]
//   [--import-lm-eval DIR]
// Every run of a sweep file compressed, measured and evaluated against the model; resumable,
// crash-safe, sharded (docs/SWEEPS.md). The library side is pipeline/sweep_run.h.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <tuple>
#include <nlohmann/json.hpp>

#include "calibration/calib_set.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/strings.h"
#include "metrics/minimal_pairs.h"
#include "pipeline/run_io.h"
#include "pipeline/memory_estimate.h"
#include "recipes/param_value.h"
#include "pipeline/sweep_results.h"
#include "pipeline/sweep_run.h"
#include "store/file.h"
#include "store/untrusted.h"
#include "tools/cli.h"
#include "tools/model_options.h"
#include "tools/run_io.h"

namespace pc::cli {

namespace {

// --dry-run: index, name, method, params, origin of every run (of the shard).
void PrintRuns(const pipeline::SweepPlan& plan, const std::vector<size_t>& runs, const std::string& shard) {
  size_t wname = 4, wmethod = 6, wparams = 6;
  std::vector<std::string> params(plan.runs.size());
  for (size_t i : runs) {
    const recipes::RecipeSpec& r = plan.runs[i].recipe;
    pipeline::MainMethodParams(r);  // unknown methods or parameters fail here, naming the recipe line
    params[i] = r.params.empty() ? "(default params)" : recipes::FormatParams(r.params);
    wname = std::max(wname, r.name.value.size());
    wmethod = std::max(wmethod, r.method.value.size());
    wparams = std::max(wparams, params[i].size());
  }
  std::printf("sweep '%s' (%s): %zu runs", plan.spec.name.value.c_str(), plan.path.c_str(), plan.runs.size());
  if (!shard.empty()) std::printf("; shard %s: %zu runs", shard.c_str(), runs.size());
  std::printf("\n%5s  %-*s  %-*s  %-*s  %s\n", "index", static_cast<int>(wname), "name", static_cast<int>(wmethod),
              "method", static_cast<int>(wparams), "params", "origin");
  for (size_t i : runs) {
    const recipes::RecipeSpec& r = plan.runs[i].recipe;
    std::printf("%5zu  %-*s  %-*s  %-*s  %s\n", i, static_cast<int>(wname), r.name.value.c_str(),
                static_cast<int>(wmethod), r.method.value.c_str(), static_cast<int>(wparams), params[i].c_str(),
                plan.runs[i].origin.c_str());
  }
}

// An existing --out must be this sweep's results (same conventions); it is rebuilt as runs finish.
void CheckSweepOutput(const std::string& out, const nlohmann::json& conventions) {
  const std::string key = pipeline::ConventionsKey(conventions);
  if (!fs::Exists(out)) {
    fs::CheckOutputPath(out, false, "--out", fs::OutputKind::kFile);
    return;
  }
  pipeline::ResultsHeader h;
  try {
    store::File f = store::OpenUntrusted(out, store::kind::kSweepResults);
    h = pipeline::ReadResultsHeader(f);
  } catch (const Error& e) {
    PC_THROW("--out: refusing to replace '", out, "': ", e.what(), "; remove it or choose another --out");
  }
  if (h.conventions_key == key) return;
  pipeline::JsonDifference d = pipeline::FirstDifference(h.conventions, conventions);
  PC_THROW("--out '", out, "' holds results of a sweep made under other conventions: '", d.path, "' was ", d.a,
           " and is now ", d.b, "; remove it (and its work folder) to start over, or choose another --out");
}

// Run files that do not open (damaged outside perpcomp: complete files are only ever renamed
// into place) are set aside as <file>.damaged and their runs redone.
void SetAsideDamagedRunFiles(const std::string& work) {
  for (const auto& path : pipeline::ListRunFiles(work)) {
    try {
      store::CheckNotDamaged(path);  // a malformed file can crash libhdf5 (store/untrusted.h)
      pipeline::ReadRunFileInfo(path);
    } catch (const Error& e) {
      log::Warn("sweep", "run file '", path, "' cannot be read (", e.what(), "); moved to '", path,
                ".damaged' and its run will be redone");
      if (std::rename(path.c_str(), (path + ".damaged").c_str()) != 0) {
        PC_THROW("cannot move the damaged run file '", path, "' aside; delete it and rerun");
      }
    }
  }
}

}  // namespace

int RunSweepCmd(const std::vector<std::string>& args) {
  CommonOptions common;
  CacheFlags cache;
  std::string model_dir, sweep_path, eval_path, out, work, shard_text, lm_eval_dir, max_memory;
  std::vector<std::string> pair_specs, calib_texts;
  pipeline::CalibOverrides calib;
  int64_t samples = 0, calib_seq_len = 0, seed = -1, seq_len = 0, max_windows = 0, batch = 0, max_pairs = 0;
  bool keep_models = false, dry_run = false, per_token = false, retry_failed = false;
  po::options_description desc("options");
  desc.add_options()
    ("model", po::value<std::string>(&model_dir), "reference Hugging Face model folder (compressed by every run)")
    ("sweep", po::value<std::string>(&sweep_path), "sweep file (docs/RECIPES.md), e.g. recipes/sweeps/default.yaml")
    ("calib", po::value<std::string>(&calib.source), "calibration text (plain or *.jsonl) or self:N")
    ("calib-samples", po::value<int64_t>(&samples)->default_value(0), "calibration samples (0: recipe/method default)")
    ("calib-seq-len", po::value<int64_t>(&calib_seq_len)->default_value(0), "tokens per calibration sample (0: recipe default)")
    ("calib-seed", po::value<int64_t>(&seed)->default_value(-1), "calibration seed (-1: recipe default, 0)");
  AddCalibTextOption(desc, calib_texts);
  desc.add_options()
    ("eval", po::value<std::string>(&eval_path), "evaluation text (plain or *.jsonl): error metrics, dNLL, KL, top-1")
    ("pairs", po::value<std::vector<std::string>>(&pair_specs)->composing(),
     "minimal pairs: BLiMP .jsonl file, folder of them, or blimp-sva (repeatable)")
    ("max-pairs", po::value<int64_t>(&max_pairs)->default_value(0), "score the first N pairs of each --pairs file (0: all)")
    ("out", po::value<std::string>(&out), "results file (kind sweep-results), rebuilt after every run")
    ("work", po::value<std::string>(&work), "work folder (default: <out without .h5>.work beside --out)")
    ("shard", po::value<std::string>(&shard_text), "run only the runs with index % N == K (K/N, K in 0..N-1)")
    ("keep-models", po::bool_switch(&keep_models), "keep every compressed checkpoint under <work>/models")
    ("retry-failed", po::bool_switch(&retry_failed),
     "run again the runs that failed earlier (recorded as failed in their run files; otherwise reported and skipped)")
    ("dry-run", po::bool_switch(&dry_run), "list the expanded runs (index, name, method, params, origin); touch nothing")
    ("seq-len", po::value<int64_t>(&seq_len)->default_value(0), "evaluation window length in tokens (0: 2048 capped at the model's context)")
    ("max-windows", po::value<int64_t>(&max_windows)->default_value(0), "evaluate the first K windows (0: all)")
    ("batch", po::value<int64_t>(&batch)->default_value(0), "windows per forward (0: automatic)")
    ("per-token", po::bool_switch(&per_token), "store every token's values in each run (large)")
    ("import-lm-eval", po::value<std::string>(&lm_eval_dir), "folder of <run>.json lm-evaluation-harness results, imported per run")
    ("max-memory", po::value<std::string>(&max_memory),
     "refuse to start when the estimated peak memory of any run exceeds SIZE (e.g. 4G, 512M, 1.5GiB)");
  AddCacheOptions(desc, cache);
  AddCommonOptions(desc, common);
  po::variables_map vm;
  if (!Parse("sweep", "--model DIR --sweep FILE.yaml --calib SPEC --eval FILE --out results.h5 [options]", desc, args,
             vm, nullptr, &common)) {
    return 0;
  }
  PC_CHECK(!sweep_path.empty(), "--sweep is required: a sweep file such as recipes/sweeps/default.yaml");
  const int64_t memory_limit = max_memory.empty() ? 0 : ParseBytes(max_memory, "--max-memory");
  pipeline::SweepOptions so;
  if (!shard_text.empty()) {
    std::tie(so.shard_k, so.shard_n) = ParseShard(shard_text, "--shard");
    so.sharded = true;
  }
  const pipeline::SweepPlan plan = pipeline::LoadSweepPlan(sweep_path);
  const std::vector<size_t> mine = pipeline::ShardIndices(plan.runs.size(), so.shard_k, so.shard_n);
  if (dry_run) {
    PrintRuns(plan, mine, so.sharded ? shard_text : "");
    return 0;
  }
  PC_CHECK(!model_dir.empty(), "--model is required (or --dry-run)");
  PC_CHECK(!eval_path.empty(), "--eval is required: the text the runs are measured and evaluated on");
  PC_CHECK(!out.empty(), "--out is required: the results file (for example results.h5)");
  PC_CHECK(batch >= 0, "--batch must not be negative");
  PC_CHECK(max_pairs >= 0, "--max-pairs must not be negative, got ", max_pairs);
  PC_CHECK(max_pairs == 0 || !pair_specs.empty(), "--max-pairs needs --pairs");
  if (samples != 0) { PC_CHECK(samples > 0, "--calib-samples must be positive, got ", samples); calib.samples = samples; }
  if (calib_seq_len != 0) {
    PC_CHECK(calib_seq_len > 0, "--calib-seq-len must be positive, got ", calib_seq_len);
    calib.seq_len = calib_seq_len;
  }
  PC_CHECK(seed >= -1, "--calib-seed must be a seed >= 0 (or -1: the recipe's default), got ", seed);
  if (seed >= 0) calib.seed = static_cast<uint64_t>(seed);
  CheckCalibOption(calib.source);
  calib.texts = ParseCalibTexts(calib_texts);
  for (size_t i : mine) {  // every run's calibration text resolves before anything runs
    PC_CHECK(!pipeline::CalibSourceFor(plan.runs[i].recipe, calib).empty(),
             "--calib is required: a text file (plain or *.jsonl) or self:N (run '",
             plan.runs[i].recipe.name.value, "' names no calibration text of its own)");
  }
  if (!lm_eval_dir.empty()) {
    PC_CHECK(fs::IsDirectory(lm_eval_dir), "--import-lm-eval '", lm_eval_dir, "' is not a folder (expected <run>.json files)");
  }

  // Inputs that can be wrong are read before anything is written.
  pipeline::SweepInputs in;
  in.model_dir = model_dir;
  in.calib = calib;
  in.eval_path = eval_path;
  in.lm_eval_dir = lm_eval_dir;
  in.max_pairs = max_pairs;
  for (const auto& f : ResolvePairSpecs(pair_specs, SharedDataDir())) {
    std::vector<MinimalPair> p = ReadMinimalPairs(f);
    if (max_pairs > 0 && static_cast<int64_t>(p.size()) > max_pairs) p.resize(static_cast<size_t>(max_pairs));
    in.pairs.insert(in.pairs.end(), p.begin(), p.end());
    in.pair_files.push_back(f);
  }
  // Sentences longer than the context are refused now, and the longest counts in the estimate.
  const int64_t longest_pair = in.pairs.empty() ? 0
                               : CheckPairLengths(*pipeline::LoadModelTokenizer(model_dir), in.pairs,
                                                  LoadModelConfig(model_dir).max_pos);
  pipeline::TextWindows tw =
      pipeline::LoadTextWindows(eval_path, "text", seq_len, max_windows, LoadModelConfig(model_dir), model_dir);
  in.windows = tw.windows.tokens;
  in.eval_sha256 = tw.text.sha256;
  in.stream_tokens = tw.windows.stream_tokens;

  {
    // The peak of the largest stage of any run, from config.json and the options only.
    const ModelConfig config = LoadModelConfig(model_dir);
    std::vector<pipeline::CompressMemoryOptions> runs;
    for (size_t i : mine) {
      runs.push_back(pipeline::CompressMemoryFor(config, plan.runs[i].recipe, samples, calib_seq_len,
                                                 pipeline::CalibSourceFor(plan.runs[i].recipe, calib)));
    }
    pipeline::EvalMemoryOptions eo;
    eo.windows = in.windows.size(0);
    eo.seq_len = in.windows.size(1);
    eo.batch = batch;
    eo.disk_bytes = pipeline::DiskWeightBytes(config);
    eo.per_token = per_token;
    eo.text_bytes = fs::FileSize(eval_path);
    // ScoreMinimalPairs' default batch, or the longest sequence when it is longer (a batch of its own).
    eo.pair_tokens = in.pairs.empty() ? 0 : std::max<int64_t>(8192, longest_pair);
    const pipeline::MemoryEstimate memory = pipeline::EstimateSweep(config, runs, eo);
    log::Verbose("sweep", memory.Describe(8));
    pipeline::CheckMemoryFits(memory, memory_limit,
                              "reduce --calib-samples, --calib-seq-len, --max-windows or --batch");
  }

  so.out = out;
  so.work = work.empty() ? pipeline::DefaultWorkDir(out) : work;
  so.keep_models = keep_models;
  so.per_token = per_token;
  so.batch = batch;
  so.cache = ToCacheOptions(cache);
  if (const char* crash = std::getenv("PERPCOMP_TEST_CRASH")) so.crash_at = crash;
  so.retry_failed = retry_failed;
  // A run that throws (non-finite weights, a Hessian singular after every retry) is recorded as
  // failed and the sweep goes on with the next run. A failed write (no space, a file-size limit)
  // stops the sweep: every later run would fail the same way.
  so.guard = [](const std::function<void()>& run, std::string* error) {
    try {
      run();
      return true;
    } catch (const OutputError&) {
      throw;
    } catch (const std::exception& e) {
      *error = e.what();
      return false;
    }
  };

  {
    std::vector<std::pair<std::string, std::string>> inputs = {
        {"--model", model_dir}, {"--sweep", sweep_path}, {"--calib", calib.source}, {"--eval", eval_path}};
    for (const auto& f : in.pair_files) inputs.push_back({"--pairs", f});
    fs::CheckNotAnInput(out, "--out", inputs);
  }
  const nlohmann::json conventions = pipeline::SweepConventions(in, so.cache);
  CheckSweepOutput(out, conventions);
  SetAsideDamagedRunFiles(so.work);
  log::Info("sweep", "'", plan.spec.name.value, "': ", mine.size(), " of ", plan.runs.size(), " runs",
            so.sharded ? " (shard " + shard_text + ")" : std::string(), " on ", model_dir, "; ",
            in.windows.size(0), " x ", in.windows.size(1), " evaluation tokens; work folder ", so.work);
  pipeline::SweepSummary s = pipeline::RunSweep(plan, in, conventions, so);
  if (s.restored > 0) {
    std::printf("sweep '%s': %zu finished run(s) restored from %s into the work folder %s\n",
                plan.spec.name.value.c_str(), s.restored, out.c_str(), s.work.c_str());
  }
  std::printf("sweep '%s': %zu of %zu runs complete (%zu now, %zu earlier) -> %s\n", plan.spec.name.value.c_str(),
              s.done + s.skipped, s.in_shard, s.done, s.skipped, out.c_str());
  if (!s.failed.empty()) {
    std::printf("%zu run(s) failed (%zu now, %zu earlier; rerun with --retry-failed to try them again):\n",
                s.failed.size(), s.failed_now, s.failed.size() - s.failed_now);
    for (const auto& [name, error] : s.failed) std::printf("  %s: %s\n", name.c_str(), error.c_str());
    return 3;
  }
  return 0;
}

}  // namespace pc::cli
