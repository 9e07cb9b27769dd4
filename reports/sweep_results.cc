#include "reports/sweep_results.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "store/file.h"
#include "store/untrusted.h"

namespace pc::reports {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string RequireString(const store::Group& g, const std::string& name) {
  PC_CHECK(g.HasAttr(name), g.Where(), ": missing attribute '", name,
           "' (a sweep-results run needs it; docs/HDF5.md \"sweep-run\")");
  return g.GetAttr<std::string>(name);
}

double OptionalDouble(const store::Group& g, const std::string& name) {
  return g.HasAttr(name) ? g.GetAttr<double>(name) : kNaN;
}

void ReadPairs(const store::Group& run, SweepRun* r) {
  if (!run.IsGroup("pairs")) return;
  const store::Group pairs = run.OpenGroup("pairs");
  r->has_pairs = true;
  r->pairs_accuracy = OptionalDouble(pairs, "accuracy");
  r->pairs_ref_accuracy = OptionalDouble(pairs, "ref_accuracy");
  r->pairs_accuracy_drop = OptionalDouble(pairs, "accuracy_drop");
  if (std::isnan(r->pairs_accuracy_drop) && !std::isnan(r->pairs_ref_accuracy) && !std::isnan(r->pairs_accuracy)) {
    r->pairs_accuracy_drop = r->pairs_ref_accuracy - r->pairs_accuracy;
  }
  if (!pairs.IsTable("files")) return;
  const store::Table files = pairs.ReadTable("files");
  const auto& name = files.Get<std::string>("file");
  const auto& n = files.Get<int64_t>("pairs");
  const auto& accuracy = files.Get<double>("accuracy");
  const bool has_drop = files.Has("accuracy_drop");
  for (size_t i = 0; i < name.size(); ++i) {
    PairFileScore f;
    f.file = name[i];
    f.pairs = n[i];
    f.accuracy = accuracy[i];
    f.accuracy_drop = has_drop ? files.Get<double>("accuracy_drop")[i] : kNaN;
    r->pair_files.push_back(f);
  }
}

void ReadLmEval(const store::Group& run, SweepRun* r) {
  if (!run.IsGroup("lm_eval")) return;
  const store::Group g = run.OpenGroup("lm_eval");
  r->has_lm_eval = true;
  r->lm_eval_source = g.GetAttrOr<std::string>("source", "");
  r->lm_eval_sha256 = g.GetAttrOr<std::string>("sha256", "");
  if (!g.IsTable("scores")) return;
  const store::Table t = g.ReadTable("scores", {"task", "metric", "filter", "value"});
  for (int64_t i = 0; i < t.rows(); ++i) {
    r->lm_eval.push_back(LmEvalScore{t.Get<std::string>("task")[i], t.Get<std::string>("metric")[i],
                                     t.Get<std::string>("filter")[i], t.Get<double>("value")[i]});
  }
}

}  // namespace

std::string MethodFamily(const std::string& method, const std::string& params_json) {
  if (method != "sparsegpt" || params_json.empty()) return method;
  const nlohmann::json p = nlohmann::json::parse(params_json, nullptr, /*allow_exceptions=*/false);
  if (!p.is_object() || !p.contains("bits") || !p["bits"].is_number()) return method;
  return p["bits"].get<double>() > 0 ? "joint" : method;
}

namespace {

SweepRun ReadRun(const store::Group& runs, const std::string& name) {
  const store::Group g = runs.OpenGroup(name);
  SweepRun r;
  r.name = name;
  PC_CHECK(g.HasAttr("index"), g.Where(), ": missing attribute 'index' (a sweep-results run needs it)");
  r.index = g.GetAttr<int64_t>("index");
  r.recipe = RequireString(g, "recipe");
  r.method = RequireString(g, "method");
  r.family = RequireString(g, "family");
  r.status = RequireString(g, "status");
  PC_CHECK(r.status == "complete", g.Where(), ": the run's status is '", r.status,
           "', expected 'complete' (a sweep-results file holds complete runs only; rebuild it with perpcomp sweep "
           "or merge)");
  r.conventions_key = RequireString(g, "conventions_key");
  r.conventions = g.GetAttrOr<std::string>("conventions", "");
  r.params = g.GetAttrOr<std::string>("params", "");
  r.method_family = MethodFamily(r.method, r.params);
  r.recipe_yaml = g.GetAttrOr<std::string>("recipe_yaml", "");
  r.compression = g.GetAttrOr<std::string>("compression", "");
  r.seconds_compress = OptionalDouble(g, "seconds_compress");
  r.seconds_measure = OptionalDouble(g, "seconds_measure");
  r.seconds_eval = OptionalDouble(g, "seconds_eval");
  r.text = g.GetAttrOr<std::string>("text", "");
  r.text_sha256 = g.GetAttrOr<std::string>("text_sha256", "");
  r.seq_len = g.GetAttrOr<int64_t>("seq_len", -1);
  r.windows = g.GetAttrOr<int64_t>("windows", -1);
  r.tokens = g.GetAttrOr<int64_t>("tokens", -1);

  PC_CHECK(g.IsTable("sites"), g.Where(),
           ": no 'sites' table (the measure results of the run; docs/HDF5.md "
           "\"measure\")");
  r.sites = g.ReadTable("sites");
  if (g.IsTable("weights")) r.weights = g.ReadTable("weights");
  PC_CHECK(g.IsGroup("downstream"), g.Where(),
           ": no 'downstream' group (the run's downstream scores; "
           "docs/HDF5.md \"measure\")");
  const store::Group down = g.OpenGroup("downstream");
  for (const std::string& a : down.AttrNames()) {
    const store::DType type = down.AttrType(a);
    // A score stored as text is a damaged file, not a missing score (docs/HDF5.md: types are checked).
    PC_CHECK(type != store::DType::kString && type != store::DType::kBool, down.Where(), ": attribute '", a, "' is ",
             store::DTypeName(type), ", expected a number (float64)");
    if (type == store::DType::kFloat64) r.downstream[a] = down.GetAttr<double>(a);
  }
  ReadPairs(g, &r);
  ReadLmEval(g, &r);
  return r;
}

// The first place where two JSON values differ, depth-first ("'calib.samples': 128 vs 64"); "" when equal.
std::string FirstJsonDifference(const nlohmann::json& a, const nlohmann::json& b, const std::string& path) {
  if (a == b) return "";
  auto at = [&](const std::string& k) { return path.empty() ? k : path + "." + k; };
  if (a.is_object() && b.is_object()) {
    std::vector<std::string> keys;
    for (const auto& [k, v] : a.items()) keys.push_back(k);
    for (const auto& [k, v] : b.items()) {
      if (!a.contains(k)) keys.push_back(k);
    }
    for (const std::string& k : keys) {
      if (!a.contains(k) || !b.contains(k)) {
        return Str("'", at(k), "': ", a.contains(k) ? a[k].dump() : "absent", " vs ",
                   b.contains(k) ? b[k].dump() : "absent");
      }
      std::string d = FirstJsonDifference(a[k], b[k], at(k));
      if (!d.empty()) return d;
    }
  }
  if (a.is_array() && b.is_array() && a.size() == b.size()) {
    for (size_t i = 0; i < a.size(); ++i) {
      std::string d = FirstJsonDifference(a[i], b[i], Str(path, "[", i, "]"));
      if (!d.empty()) return d;
    }
  }
  return Str("'", path, "': ", a.dump(), " vs ", b.dump());
}

std::string Short(const std::string& key) {
  return key.size() > 12 ? key.substr(0, 12) + "…" : key;
}

}  // namespace

size_t SweepResults::RunsFrom(const TablesFolder& folder) const {
  return size_t(std::count_if(runs.begin(), runs.end(),
                              [&](const SweepRun& r) { return r.saved && r.saved->folder == folder.path; }));
}

std::string FirstConventionDifference(const std::string& a, const std::string& b) {
  const nlohmann::json ja = nlohmann::json::parse(a, nullptr, false);
  const nlohmann::json jb = nlohmann::json::parse(b, nullptr, false);
  if (!ja.is_object() || !jb.is_object()) return a == b ? "" : "the conventions texts differ";
  return FirstJsonDifference(ja, jb, "");
}

SweepResults ReadSweepResults(const std::string& path) {
  // A results file from anywhere: read once in a child process first (store/untrusted.h).
  const store::File file = store::OpenUntrusted(path, store::kind::kSweepResults);
  const store::Group root = file.root();
  SweepResults s;
  s.path = path;
  s.created_by = root.GetAttrOr<std::string>("created_by", "");
  s.created_at = root.GetAttrOr<std::string>("created_at", "");
  s.sweep = root.GetAttrOr<std::string>("sweep", "");
  s.sweep_yaml = root.GetAttrOr<std::string>("sweep_yaml", "");
  s.conventions = root.GetAttrOr<std::string>("conventions", "");
  PC_CHECK(root.HasAttr("conventions_key"), path,
           ": missing root attribute 'conventions_key' (a sweep-results "
           "file records the conventions of its numbers; docs/HDF5.md \"sweep-results\")");
  s.conventions_key = root.GetAttr<std::string>("conventions_key");
  s.shard = root.GetAttrOr<std::string>("shard", "");
  s.runs_total = root.GetAttrOr<int64_t>("runs_total", 0);
  s.runs_complete = root.GetAttrOr<int64_t>("runs_complete", 0);
  if (root.HasAttr("primary_comparisons")) {
    const nlohmann::json p = nlohmann::json::parse(root.GetAttr<std::string>("primary_comparisons"), nullptr, false);
    PC_CHECK(p.is_array(), path, ": attribute primary_comparisons is not a JSON list");
    for (const auto& e : p) {
      PC_CHECK(e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string(), path,
               ": attribute primary_comparisons: expected [perp, iso] name pairs");
      s.primary.emplace_back(e[0].get<std::string>(), e[1].get<std::string>());
    }
  }
  if (root.HasAttr("failed_runs")) {
    const nlohmann::json f = nlohmann::json::parse(root.GetAttr<std::string>("failed_runs"), nullptr, false);
    PC_CHECK(f.is_array(), path, ": attribute failed_runs is not a JSON list");
    for (const auto& e : f) {
      PC_CHECK(e.is_object() && e.value("run", nlohmann::json()).is_string() &&
                   e.value("error", nlohmann::json()).is_string(),
               path, ": attribute failed_runs: expected {\"run\": ..., \"error\": ...} entries");
      s.failed.emplace_back(e["run"].get<std::string>(), e["error"].get<std::string>());
    }
  }
  s.reference_ppl = OptionalDouble(root, "reference_ppl");
  s.reference_mean_nll = OptionalDouble(root, "reference_mean_nll");
  s.reference_pairs_accuracy = OptionalDouble(root, "reference_pairs_accuracy");

  PC_CHECK(root.IsGroup("runs"), path, ": no 'runs' group (a sweep-results file holds its runs under /runs)");
  const store::Group runs = root.OpenGroup("runs");
  const std::vector<std::string> names = runs.ListGroups();
  PC_CHECK(s.runs_complete <= static_cast<int64_t>(names.size()), path, ": runs_complete is ", s.runs_complete,
           " but /runs holds ", names.size(), " runs; the file is damaged (rebuild it with perpcomp sweep or merge)");
  for (const std::string& name : names) s.runs.push_back(ReadRun(runs, name));
  PC_CHECK(!s.runs.empty(), path, ": /runs holds no run (nothing to rank)");
  s.runs_in_file = s.runs.size();
  PC_CHECK(s.runs_total <= 0 || s.runs_complete <= s.runs_total, path, ": runs_complete ", s.runs_complete,
           " exceeds runs_total ", s.runs_total, "; the file is damaged (rebuild it with perpcomp sweep or merge)");
  std::stable_sort(s.runs.begin(), s.runs.end(), [](const SweepRun& a, const SweepRun& b) {
    return a.index != b.index ? a.index < b.index : a.name < b.name;
  });

  for (const SweepRun& r : s.runs) {
    if (r.conventions_key == s.conventions_key) continue;
    std::string diff = FirstConventionDifference(s.conventions, r.conventions);
    PC_THROW(path, ":/runs/", r.name, ": conventions_key ", Short(r.conventions_key), " differs from the file's ",
             Short(s.conventions_key), diff.empty() ? std::string() : " (first differing convention: " + diff + ")",
             "; runs made under different conventions cannot be ranked together");
  }
  return s;
}

}  // namespace pc::reports
