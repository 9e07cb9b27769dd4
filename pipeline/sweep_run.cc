#include "pipeline/sweep_run.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>

#include "calibration/calib_set.h"
#include "compress/method.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/json_util.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/sha256.h"
#include "core/strings.h"
#include "metrics/lm_eval_import.h"
#include "metrics/measure.h"
#include "metrics/perplexity.h"
#include "metrics/results_h5.h"
#include "model/tokenizer/tokenizer.h"
#include "recipes/plan.h"
#include "pipeline/sweep_results.h"
#include "store/file.h"

namespace pc::pipeline {

using recipes::ExpandSweep;
using recipes::ParseSweepFile;
using recipes::RecipeSpec;
using recipes::RecipeToYaml;
using recipes::ResolvePlan;
using recipes::SweepRun;
using recipes::ToScalar;

namespace stdfs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kReferenceGroup = "reference";

std::string Absolute(const std::string& path) { return stdfs::absolute(path).lexically_normal().string(); }

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// ---- fault injection (tests) ----

class CrashHook {
 public:
  explicit CrashHook(const std::string& spec) {
    if (spec.empty()) return;
    std::vector<std::string> parts = Split(spec, ':');
    PC_CHECK((parts.size() == 2 || (parts.size() == 3 && parts[2] == "throw")) && !parts[0].empty() &&
                 !parts[1].empty(),
             "crash hook: expected <run>:<point>[:throw], got '", spec, "'");
    run_ = parts[0];
    point_ = parts[1];
    throw_ = parts.size() == 3;
  }
  bool Matches(const std::string& run, const std::string& point) const {
    return !run_.empty() && run == run_ && point == point_;
  }
  // SIGKILL when `run` reaches `point`; with "throw", an error instead (the failed-run tests).
  void At(const std::string& run, const std::string& point) const {
    if (!Matches(run, point)) return;
    PC_CHECK(!throw_, "injected failure of run '", run, "' at ", point, " (PERPCOMP_TEST_CRASH)");
    std::fflush(nullptr);
    std::raise(SIGKILL);
  }

 private:
  std::string run_, point_;
  bool throw_ = false;
};

// ---- the work folder ----

// flock on <work>/.lock for the life of the sweep; the kernel releases it when the process dies.
class WorkLock {
 public:
  explicit WorkLock(const std::string& work) {
    const std::string path = fs::Join(work, ".lock");
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0644);  // a FIFO must not block
    PC_CHECK(fd_ >= 0, "cannot open the lock file '", path, "'");
    struct stat st;
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd_);
      PC_THROW("the lock file '", path, "' is not a regular file; remove it");
    }
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      std::string holder = fs::ReadFile(path);
      ::close(fd_);
      PC_THROW("another perpcomp sweep (", holder.empty() ? std::string("pid unknown") : "pid " + Trim(holder),
               ") is running in the work folder '", work, "'; wait for it, or give this one another --out or --work");
    }
    std::string pid = std::to_string(::getpid()) + "\n";
    PC_CHECK_OUTPUT(::ftruncate(fd_, 0) == 0 && ::pwrite(fd_, pid.data(), pid.size(), 0) == static_cast<ssize_t>(pid.size()),
             "cannot write the lock file '", path, "'");
  }
  ~WorkLock() {
    if (fd_ >= 0) ::close(fd_);  // releases the lock
  }
  WorkLock(const WorkLock&) = delete;
  WorkLock& operator=(const WorkLock&) = delete;

 private:
  int fd_ = -1;
};

// Temporary files and folders ("<name>.tmp-<pid>-<n>") left by a killed sweep: in the work
// folder (we hold its lock, so nothing there is being written) and beside the results file.
void RemoveTemporaries(const std::string& work, const std::string& out) {
  std::error_code ec;
  auto sweep = [&](const std::string& dir, const std::string& prefix) {
    if (!stdfs::is_directory(dir, ec)) return;
    for (const auto& e : stdfs::directory_iterator(dir, ec)) {
      const std::string name = e.path().filename().string();
      if (name.rfind(prefix, 0) == 0 && name.find(".tmp-") != std::string::npos) {
        log::Verbose("sweep", "removing the temporary '", e.path().string(), "' of an interrupted sweep");
        fs::RemoveAll(e.path().string());
      }
    }
  };
  for (const char* sub : {"", "runs", "models"}) sweep(fs::Join(work, sub), "");
  sweep(fs::Parent(Absolute(out)), fs::Basename(out) + ".tmp-");
}

// <work>/sweep.json: the conventions of the sweep kept in this folder. A different set refuses.
void CheckOrWriteState(const std::string& work, const std::string& out, const SweepPlan& plan,
                       const json& conventions, const std::string& key) {
  const std::string path = fs::Join(work, "sweep.json");
  if (fs::Exists(path)) {
    json old = LoadJsonFile(path);
    json old_conv = JsonAt(old, "conventions", path);
    if (JsonString(old, "conventions_key", path) != key) {
      JsonDifference d = FirstDifference(old_conv, conventions);
      PC_THROW("the work folder '", work, "' holds a sweep made under different conventions: '", d.path, "' was ", d.a,
               " and is now ", d.b, "; to start over delete '", work, "' and '", out,
               "', or keep them and give this sweep another --out (or --work)");
    }
    return;
  }
  json state = {{"perpcomp_sweep_state", 1},
                {"sweep", Absolute(plan.path)},
                {"sweep_name", plan.spec.name.value},
                {"out", Absolute(out)},
                {"conventions", conventions},
                {"conventions_key", key},
                {"created_by", store::CreatedBy()}};
  fs::WriteFileAtomic(path, state.dump(2) + "\n");
}

// ---- the reference ----

// <work>/reference.h5 (kind "eval"): /reference with the reference's perplexity on the windows
// and, with pairs, its minimal-pair scores; valid when its conventions_key matches.
bool ReferenceFileValid(const std::string& path, const std::string& key) {
  if (!fs::Exists(path)) return false;
  store::File f = store::File::OpenRead(path, store::kind::kEval);
  return f.root().IsGroup(kReferenceGroup) &&
         f.root().OpenGroup(kReferenceGroup).GetAttrOr<std::string>("conventions_key", "") == key;
}

void WriteReferenceFile(const std::string& path, Model& ref, const Tokenizer& tok, const SweepInputs& in,
                        const SweepOptions& o, const std::string& key) {
  log::Info("sweep", "evaluating the reference ", in.model_dir, " (perplexity", in.pairs.empty() ? "" : ", minimal pairs",
            ")");
  PerplexityResult ppl = EvaluatePerplexity(ref, in.windows, o.batch, /*keep_token_nll=*/false);
  store::StagedWriter w = store::File::CreateStaged(path, store::kind::kEval, /*overwrite=*/true, "reference file");
  store::Group g = w.root().CreateGroup(kReferenceGroup);
  SetAttrs(g, {{"conventions_key", key},
               {"model", in.model_dir},
               {"text", in.eval_path},
               {"text_sha256", in.eval_sha256},
               {"ppl", ppl.ppl},
               {"mean_nll", ppl.mean_nll},
               {"tokens", ppl.tokens},
               {"windows", ppl.windows},
               {"seq_len", ppl.seq_len},
               {"metrics_conventions", kMetricsConventionsVersion}});
  if (!in.pairs.empty()) {
    std::vector<PairScore> scores = ScoreMinimalPairs(ref, tok, in.pairs);
    WritePairs(g.CreateGroup("pairs"), in.pairs, scores, AggregatePairs(in.pairs, scores));
  }
  w.Commit();
}

// The reference's minimal-pair accuracy overall and per file (from the reference file).
struct ReferencePairs {
  double accuracy = 0;
  std::map<std::string, double> by_file;
};
ReferencePairs ReadReferencePairs(const std::string& path) {
  store::File f = store::File::OpenRead(path, store::kind::kEval);
  store::Group p = f.root().OpenGroup(kReferenceGroup).OpenGroup("pairs");
  ReferencePairs r;
  r.accuracy = p.GetAttr<double>("accuracy");
  store::Table files = p.ReadTable("files", {"file", "accuracy"});
  const auto& names = files.Get<std::string>("file");
  const auto& acc = files.Get<double>("accuracy");
  for (size_t i = 0; i < names.size(); ++i) r.by_file[names[i]] = acc[i];
  return r;
}

// ---- one run ----

struct SweepContext {
  const SweepPlan& plan;
  const SweepInputs& in;
  const SweepOptions& o;
  std::string work, runs_dir, models_dir, reference_file;
  json conventions;
  std::string key;
  CrashHook crash;
  Model* reference = nullptr;
  const Tokenizer* tokenizer = nullptr;
};

struct RunOutcome {
  DownstreamSummary downstream;
  bool has_pairs = false;
  double accuracy_drop = 0;
  double seconds = 0;
};

// pairs/ as eval writes it, plus ref_accuracy, accuracy_drop and the files' accuracy_drop column.
void WriteRunPairs(const store::Group& run, const SweepContext& c, const std::vector<PairScore>& scores,
                   const PairAccuracy& acc, RunOutcome* outcome) {
  store::Group p = run.CreateGroup("pairs");
  WritePairs(p, c.in.pairs, scores, acc);
  const ReferencePairs ref = ReadReferencePairs(c.reference_file);
  p.SetAttr("ref_accuracy", ref.accuracy);
  p.SetAttr("accuracy_drop", ref.accuracy - acc.overall.accuracy);
  store::Group files = p.OpenGroup("files");
  store::Table t = p.ReadTable("files", {"file", "accuracy"});
  const auto& names = t.Get<std::string>("file");
  const auto& accuracy = t.Get<double>("accuracy");
  std::vector<double> drop(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    auto it = ref.by_file.find(names[i]);
    PC_ASSERT(it != ref.by_file.end(), "reference pairs lack file ", names[i]);
    drop[i] = it->second - accuracy[i];
  }
  files.WriteVector("accuracy_drop", drop);
  std::vector<std::string> columns = files.GetAttr<std::vector<std::string>>("columns");
  columns.push_back("accuracy_drop");
  files.SetAttr("columns", columns);
  outcome->has_pairs = true;
  outcome->accuracy_drop = ref.accuracy - acc.overall.accuracy;
}

// compress/: the compress.h5 tables and its root attributes (recipe, method, calibration_json, ...).
void CopyCompressLog(const store::Group& run, const std::string& model_dir) {
  store::Group g = run.CreateGroup("compress");
  store::File log = store::File::OpenRead(fs::Join(model_dir, "compress.h5"), store::kind::kCompressLog);
  CopyScalarAttributes(log.root(), g, {"perpcomp_schema", "perpcomp_kind", "created_by", "created_at"});
  for (const auto& name : log.root().ListGroups()) store::CopyGroup(log.root(), name, g, name);
}

std::string LmEvalPath(const SweepInputs& in, const std::string& run) {
  if (in.lm_eval_dir.empty()) return "";
  std::string p = fs::Join(in.lm_eval_dir, run + ".json");
  return fs::Exists(p) ? p : "";
}

RunOutcome RunOne(SweepContext& c, size_t index, Progress& progress, const std::string& position) {
  const SweepRun& run = c.plan.runs[index];
  const RecipeSpec& recipe = run.recipe;
  const std::string& name = recipe.name.value;
  const std::string model_dir = fs::Join(c.models_dir, name);
  auto stage = [&](const char* s) {
    progress.SetNote(Str(position, " ", name, ": ", s));
    log::Verbose("sweep", position, " ", name, ": ", s);
    c.crash.At(name, s);
  };
  const auto start = std::chrono::steady_clock::now();

  stage("compress");
  CompressRunOptions co;
  co.model_dir = c.in.model_dir;
  co.out_dir = model_dir;
  co.overwrite = true;  // a folder left by a killed run is replaced
  co.calib = c.in.calib;
  CompressRunResult compressed = RunCompress(recipe, co);
  const double seconds_compress = SecondsSince(start);

  stage("measure");
  auto t = std::chrono::steady_clock::now();
  // Measured block by block (metrics/measure.h); minimal pairs need the whole forward.
  LoadOptions lo;
  lo.load_blocks = !c.in.pairs.empty();
  auto model = Model::Load(model_dir, lo);
  MeasureOptions mo;
  mo.batch = c.o.batch;
  mo.per_token = c.o.per_token;
  mo.cache = c.o.cache;
  mo.text_sha256 = c.in.eval_sha256;
  mo.reference_name = "reference '" + c.in.model_dir + "'";
  mo.compressed_name = "compressed '" + model_dir + "'";
  mo.after_block = [&](int l) { c.crash.At(name, Str("measure-block-", l)); };
  MeasureResult measured = Measure(*c.reference, *model, c.in.windows, mo);
  const double seconds_measure = SecondsSince(t);

  stage("eval");
  t = std::chrono::steady_clock::now();
  std::vector<PairScore> scores;
  PairAccuracy accuracy;
  if (!c.in.pairs.empty()) {
    scores = ScoreMinimalPairs(*model, *c.tokenizer, c.in.pairs);
    accuracy = AggregatePairs(c.in.pairs, scores);
  }
  std::optional<LmEvalResults> lm_eval;
  const std::string lm_path = LmEvalPath(c.in, name);
  if (!lm_path.empty()) lm_eval = ReadLmEvalResults(lm_path);
  const double seconds_eval = SecondsSince(t);

  progress.SetNote(Str(position, " ", name, ": writing"));
  RunOutcome outcome;
  outcome.downstream = measured.downstream;
  const std::string path = fs::Join(c.runs_dir, RunFileName(static_cast<int64_t>(index), name));
  store::StagedWriter w = store::File::CreateStaged(path, store::kind::kSweepRun, /*overwrite=*/true, "run file");
  store::Group g = w.root().CreateGroup("runs").CreateGroup(name);
  const std::string method = recipe.method.value;
  SetAttrs(g, {{"run", name},
               {"index", static_cast<int64_t>(index)},
               {"recipe", name},
               {"method", method},
               {"family", MethodRegistry::Builtins().Get(method).family},
               {"params", MainMethodParams(recipe).dump()},
               {"recipe_yaml", RecipeToYaml(recipe)},
               {"origin", run.origin},
               {"compression", compressed.record.dump()},
               {"conventions", c.conventions.dump()},
               {"conventions_key", c.key},
               {"reference", c.in.model_dir},
               {"text", c.in.eval_path},
               {"text_sha256", c.in.eval_sha256},
               {"stream_tokens", c.in.stream_tokens},
               {"tokens", measured.windows * (measured.seq_len - 1)},
               {"dtype", "f32"},
               {"model_type", c.reference->config().model_type},
               {"layers", c.reference->num_layers()},
               {"seconds_compress", seconds_compress},
               {"seconds_measure", seconds_measure},
               {"seconds_eval", seconds_eval}});
  WriteMeasureRun(g, measured, c.in.windows);
  if (!c.in.pairs.empty()) WriteRunPairs(g, c, scores, accuracy, &outcome);
  CopyCompressLog(g, model_dir);
  if (lm_eval) WriteLmEval(g.CreateGroup("lm_eval"), *lm_eval);
  g.SetAttr("status", kRunComplete);
  if (c.crash.Matches(name, "write-run")) {
    w.file().Flush();  // the half-written file on disk, as a crash would leave it
    c.crash.At(name, "write-run");
  }
  w.Commit();
  model.reset();
  if (!c.o.keep_models) fs::RemoveAll(model_dir);
  outcome.seconds = SecondsSince(start);
  return outcome;
}

// A finished run whose lm-evaluation-harness file appeared or changed since: its run file is
// rewritten (staged) with the new lm_eval/ group.
void RefreshLmEval(const std::string& path, const std::string& lm_path) {
  LmEvalResults lm = ReadLmEvalResults(lm_path);
  store::File old = store::File::OpenRead(path, store::kind::kSweepRun);
  const store::Group old_runs = old.root().OpenGroup("runs");
  const std::string name = old_runs.ListGroups().at(0);
  const store::Group src = old_runs.OpenGroup(name);
  store::StagedWriter w = store::File::CreateStaged(path, store::kind::kSweepRun, /*overwrite=*/true, "run file");
  store::Group g = w.root().CreateGroup("runs").CreateGroup(name);
  CopyScalarAttributes(src, g);
  for (const auto& child : src.ListGroups()) {
    if (child != "lm_eval") store::CopyGroup(src, child, g, child);
  }
  WriteLmEval(g.CreateGroup("lm_eval"), lm);
  w.Commit();
  log::Info("sweep", "imported ", lm_path, " into the finished run '", name, "'");
}

// The run file of a run that threw: status "failed" and the message, with the identity a resume
// compares (conventions, recipe), and nothing else.
void WriteFailedRunFile(const SweepContext& c, size_t index, const std::string& error) {
  const RecipeSpec& recipe = c.plan.runs[index].recipe;
  const std::string& name = recipe.name.value;
  const std::string path = fs::Join(c.runs_dir, RunFileName(static_cast<int64_t>(index), name));
  store::StagedWriter w = store::File::CreateStaged(path, store::kind::kSweepRun, /*overwrite=*/true, "run file");
  store::Group g = w.root().CreateGroup("runs").CreateGroup(name);
  SetAttrs(g, {{"run", name},
               {"index", static_cast<int64_t>(index)},
               {"recipe", name},
               {"method", recipe.method.value},
               {"recipe_yaml", RecipeToYaml(recipe)},
               {"conventions_key", c.key},
               {"status", kRunFailed},
               {"error", error}});
  w.Commit();
}

void PrintRunLine(const std::string& position, const std::string& name, const RunOutcome& r) {
  const DownstreamSummary& d = r.downstream;
  char pairs[64] = "";
  if (r.has_pairs) std::snprintf(pairs, sizeof pairs, "  acc drop %+.4f", r.accuracy_drop);
  std::printf("%s %-28s dNLL %+.5f ± %.5f  KL %.5f  top-1 %.4f%s  %.1f s\n", position.c_str(), name.c_str(),
              d.delta_nll, d.delta_nll_se, d.kl_mean, d.top1_agreement, pairs, r.seconds);
  std::fflush(stdout);
}

}  // namespace

SweepPlan LoadSweepPlan(const std::string& path) {
  SweepPlan p;
  p.path = path;
  p.spec = ParseSweepFile(path, ShippedRecipesDir());
  p.yaml = fs::ReadFile(path);
  p.runs = ExpandSweep(p.spec);
  return p;
}

std::vector<size_t> ShardIndices(size_t runs, int k, int n) {
  PC_CHECK(n >= 1 && k >= 0 && k < n, "--shard: expected K/N with 0 <= K < N, got ", k, "/", n);
  std::vector<size_t> out;
  for (size_t i = 0; i < runs; ++i) {
    if (static_cast<int>(i % static_cast<size_t>(n)) == k) out.push_back(i);
  }
  return out;
}

json MainMethodParams(const RecipeSpec& recipe) {
  const MethodInfo& info = MethodRegistry::Builtins().Get(recipe.method.value, recipe.method.loc.Str());
  std::map<std::string, ParamScalar> given;
  std::map<std::string, std::string> where;
  for (const auto& [k, v] : recipe.params) {
    given[k] = ToScalar(v, "'" + k + "'");
    where[k] = v.loc().Str();
  }
  return ResolveParams(info.name, info.params, given, where, recipe.method.loc.Str()).ToJson();
}

std::string DefaultWorkDir(const std::string& out) {
  std::string base = EndsWith(out, ".h5") ? out.substr(0, out.size() - 3) : out;
  return base + ".work";
}

json SweepConventions(const SweepInputs& in, const CacheOptions& cache) {
  json pairs = json::array();
  for (const auto& f : in.pair_files) pairs.push_back({{"file", Absolute(f)}, {"sha256", Sha256File(f)}});
  json calib = {{"source", nullptr}, {"samples", nullptr}, {"seq_len", nullptr}, {"seed", nullptr}};
  // --calib: none (source stays null), self:N (as given) or a file (absolute path and sha256).
  int64_t self_n = 0;
  if (ParseSelfSpec(in.calib.source, "--calib", &self_n)) {
    calib["source"] = in.calib.source;
  } else if (!in.calib.source.empty()) {
    calib["source"] = Absolute(in.calib.source);
    calib["sha256"] = Sha256File(in.calib.source);
  }
  // --calib-text: present only when given, so that work folders made without it still match.
  if (!in.calib.texts.empty()) {
    json texts = json::object();
    for (const auto& [name, file] : in.calib.texts) texts[name] = {{"source", Absolute(file)}, {"sha256", Sha256File(file)}};
    calib["texts"] = texts;
  }
  if (in.calib.samples) calib["samples"] = *in.calib.samples;
  if (in.calib.seq_len) calib["seq_len"] = *in.calib.seq_len;
  if (in.calib.seed) calib["seed"] = *in.calib.seed;
  const std::string memo = cache.dir.empty() ? "" : fs::Join(cache.dir, "model-hashes");
  json conventions{{"model", Absolute(in.model_dir)},
              {"model_hash", ModelContentHash(in.model_dir, memo)},
              {"eval_text", Absolute(in.eval_path)},
              {"eval_sha256", in.eval_sha256},
              {"seq_len", in.windows.size(1)},
              {"windows", in.windows.size(0)},
              {"pairs", pairs},
              {"calib", calib},
              {"metrics_conventions", kMetricsConventionsVersion},
              {"perpcomp", store::CreatedBy()}};
  // Present only when set, so that work folders made before --max-pairs still match.
  if (in.max_pairs > 0) conventions["max_pairs"] = in.max_pairs;
  return conventions;
}

std::vector<std::string> ListRunFiles(const std::string& work) {
  std::vector<std::string> out;
  std::error_code ec;
  const std::string dir = fs::Join(work, "runs");
  if (!stdfs::is_directory(dir, ec)) return out;
  for (const auto& e : stdfs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (EndsWith(name, ".h5") && name.find(".tmp-") == std::string::npos) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Restores what the work folder lacks from the results file `out` (this sweep's earlier output;
// tools/cmd_sweep.cc checked that it is a sweep-results file): the reference file, when the
// results' /reference has the same conventions key, and the run file of every run of `mine`
// that the results hold complete with the same index, conventions key and recipe. Each file is
// written staged, as the sweep writes it, so a sweep resumes from its results file alone (a new
// machine, a cleaned scratch disk; docs/SWEEPS.md "Resuming"). Failed runs are not in the
// results' runs and run again. Returns the run files restored.
size_t RestoreFromResults(const SweepContext& c, const std::string& out, const std::vector<size_t>& mine) {
  if (!fs::Exists(out)) return 0;
  store::File results = store::File::OpenRead(out, store::kind::kSweepResults);
  const store::Group root = results.root();
  if (root.GetAttrOr<std::string>("conventions_key", "") != c.key) return 0;
  if (!ReferenceFileValid(c.reference_file, c.key) && root.IsGroup(kReferenceGroup) &&
      root.OpenGroup(kReferenceGroup).GetAttrOr<std::string>("conventions_key", "") == c.key) {
    store::StagedWriter w = store::File::CreateStaged(c.reference_file, store::kind::kEval, /*overwrite=*/true,
                                                      "reference file");
    store::CopyGroup(root, kReferenceGroup, w.root(), kReferenceGroup);
    w.Commit();
    log::Info("sweep", "restored the reference file ", c.reference_file, " from ", out);
  }
  if (!root.IsGroup("runs")) return 0;
  const store::Group runs = root.OpenGroup("runs");
  size_t restored = 0;
  for (size_t i : mine) {
    const RecipeSpec& r = c.plan.runs[i].recipe;
    const std::string& name = r.name.value;
    const std::string path = fs::Join(c.runs_dir, RunFileName(static_cast<int64_t>(i), name));
    if (fs::Exists(path) || !runs.IsGroup(name)) continue;
    const store::Group g = runs.OpenGroup(name);
    const bool same = g.GetAttrOr<std::string>("status", "") == kRunComplete &&
                      g.GetAttrOr<int64_t>("index", -1) == static_cast<int64_t>(i) &&
                      g.GetAttrOr<std::string>("conventions_key", "") == c.key &&
                      g.GetAttrOr<std::string>("recipe_yaml", "") == RecipeToYaml(r);
    if (!same) continue;
    store::StagedWriter w = store::File::CreateStaged(path, store::kind::kSweepRun, /*overwrite=*/true, "run file");
    store::CopyGroup(runs, name, w.root().CreateGroup("runs"), name);
    w.Commit();
    ++restored;
  }
  if (restored > 0) log::Info("sweep", "restored ", restored, " finished run file(s) into ", c.runs_dir, " from ", out);
  return restored;
}

SweepSummary RunSweep(const SweepPlan& plan, const SweepInputs& in, const json& conventions, const SweepOptions& o) {
  SweepContext c{plan, in, o, o.work.empty() ? DefaultWorkDir(o.out) : o.work, "", "", "", {}, "", CrashHook(o.crash_at)};
  c.runs_dir = fs::Join(c.work, "runs");
  c.models_dir = fs::Join(c.work, "models");
  c.reference_file = fs::Join(c.work, "reference.h5");
  fs::MakeDirs(c.runs_dir);
  fs::MakeDirs(c.models_dir);
  WorkLock lock(c.work);
  RemoveTemporaries(c.work, o.out);
  c.conventions = conventions;
  c.key = ConventionsKey(c.conventions);
  CheckOrWriteState(c.work, o.out, plan, c.conventions, c.key);

  SweepSummary summary;
  summary.work = c.work;
  summary.total = plan.runs.size();
  const std::vector<size_t> mine = ShardIndices(plan.runs.size(), o.shard_k, o.shard_n);
  summary.in_shard = mine.size();
  summary.restored = RestoreFromResults(c, o.out, mine);

  // Every recipe of the shard against the model before any work (errors name the recipe line).
  {
    LoadOptions lo;
    lo.load_blocks = false;
    auto skeleton = Model::Load(in.model_dir, lo);
    for (size_t i : mine) ResolvePlan(plan.runs[i].recipe, *skeleton, MethodRegistry::Builtins());
  }

  // Finished runs: a complete run file of the same conventions and recipe.
  std::vector<bool> finished(plan.runs.size(), false);
  std::vector<size_t> todo;
  for (size_t i : mine) {
    const RecipeSpec& r = plan.runs[i].recipe;
    const std::string path = fs::Join(c.runs_dir, RunFileName(static_cast<int64_t>(i), r.name.value));
    if (fs::Exists(path)) {
      RunFileInfo info = ReadRunFileInfo(path);
      const bool same = info.conventions_key == c.key && info.recipe_yaml == RecipeToYaml(r) && info.run == r.name.value;
      if (same && info.failed() && !o.retry_failed) {
        log::Warn("sweep", "run '", r.name.value, "' failed earlier (", info.error, "); not retried (--retry-failed)");
        summary.failed.emplace_back(r.name.value, info.error);
        continue;
      }
      finished[i] = info.complete() && same;
      if (finished[i]) {
        const std::string lm = LmEvalPath(in, r.name.value);
        if (!lm.empty() && Sha256File(lm) != info.lm_eval_sha256) RefreshLmEval(path, lm);
        const std::string model_dir = fs::Join(c.models_dir, r.name.value);
        if (!o.keep_models && fs::Exists(model_dir)) fs::RemoveAll(model_dir);
      } else if (!info.failed()) {
        log::Info("sweep", "run file '", path, "' is from another recipe or conventions; its run is redone");
      }
    }
    if (finished[i]) {
      ++summary.skipped;
    } else {
      todo.push_back(i);
    }
  }
  if (summary.skipped > 0) {
    log::Info("sweep", "skipping ", summary.skipped, " finished run(s) of ", mine.size(), " (work folder ", c.work, ")");
  }

  ResultsHeader header;
  header.sweep = plan.spec.name.value;
  header.sweep_yaml = plan.yaml;
  header.conventions = c.conventions;
  header.conventions_key = c.key;
  header.runs_total = static_cast<int64_t>(plan.runs.size());
  header.shard = o.sharded ? Str(o.shard_k, "/", o.shard_n) : "";
  header.primary = plan.spec.primary;
  auto rebuild = [&](const std::string& crash_run) {
    std::vector<std::string> files;
    for (size_t i : mine) {
      if (finished[i]) {
        files.push_back(fs::Join(c.runs_dir, RunFileName(static_cast<int64_t>(i), plan.runs[i].recipe.name.value)));
      }
    }
    header.failed = summary.failed;
    WriteSweepResults(o.out, header, c.reference_file, files, [&](size_t copied) {
      if (!crash_run.empty() && copied == 1) c.crash.At(crash_run, "write-results");
    });
  };

  const bool reference_ok = ReferenceFileValid(c.reference_file, c.key);
  std::unique_ptr<Model> reference;
  std::unique_ptr<Tokenizer> tokenizer;
  if (!todo.empty() || !reference_ok) {
    LoadOptions lo;
    lo.load_blocks = !in.pairs.empty();  // streamed block by block unless minimal pairs need the whole forward
    reference = Model::Load(in.model_dir, lo);
    tokenizer = LoadTokenizer(in.model_dir);
    c.reference = reference.get();
    c.tokenizer = tokenizer.get();
  }
  if (!reference_ok) WriteReferenceFile(c.reference_file, *reference, *tokenizer, in, o, c.key);
  rebuild("");

  Progress progress("sweep", static_cast<int64_t>(todo.size()), "runs");
  size_t position = summary.skipped;
  for (size_t i : todo) {
    ++position;
    const std::string pos = Str("[", position, "/", mine.size(), "]");
    const std::string& name = plan.runs[i].recipe.name.value;
    RunOutcome r;
    std::string error;
    const bool ok = o.guard ? o.guard([&] { r = RunOne(c, i, progress, pos); }, &error)
                            : (r = RunOne(c, i, progress, pos), true);
    if (!ok) {
      // Recorded in its run file; the sweep goes on with the next run.
      WriteFailedRunFile(c, i, error);
      const std::string model_dir = fs::Join(c.models_dir, name);
      if (!o.keep_models && fs::Exists(model_dir)) fs::RemoveAll(model_dir);
      summary.failed.emplace_back(name, error);
      ++summary.failed_now;
      rebuild("");
      progress.Add(1, Str(pos, " ", name, ": failed"));
      if (Progress::Enabled()) std::fputs("\r\x1b[K", stderr);
      log::Warn("sweep", pos, " ", name, " failed: ", error);
      std::printf("%s %-28s FAILED: %s\n", pos.c_str(), name.c_str(), error.c_str());
      std::fflush(stdout);
      continue;
    }
    finished[i] = true;
    ++summary.done;
    rebuild(plan.runs[i].recipe.name.value);
    progress.Add(1, Str(pos, " ", plan.runs[i].recipe.name.value, ": done"));
    if (Progress::Enabled()) std::fputs("\r\x1b[K", stderr);  // the summary line replaces the progress line
    PrintRunLine(pos, plan.runs[i].recipe.name.value, r);
  }
  progress.Finish();
  return summary;
}

}  // namespace pc::pipeline
