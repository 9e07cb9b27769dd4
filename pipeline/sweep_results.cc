#include "pipeline/sweep_results.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "core/error.h"
#include "core/fs.h"
#include "core/json_util.h"
#include "core/sha256.h"
#include "core/strings.h"
#include "store/group.h"
#include "store/untrusted.h"

namespace pc::pipeline {

namespace {

using nlohmann::json;

void Diff(const json& a, const json& b, const std::string& path, JsonDifference* d) {
  auto at = [&](const std::string& key) { return path.empty() ? key : path + "." + key; };
  if (a.is_object() && b.is_object()) {
    std::set<std::string> keys;
    for (const auto& [k, v] : a.items()) keys.insert(k);
    for (const auto& [k, v] : b.items()) keys.insert(k);
    for (const auto& k : keys) {
      const bool in_a = a.contains(k), in_b = b.contains(k);
      if (!in_a || !in_b) {
        *d = {at(k), in_a ? a[k].dump() : "(absent)", in_b ? b[k].dump() : "(absent)"};
        return;
      }
      Diff(a[k], b[k], at(k), d);
      if (!d->empty()) return;
    }
    return;
  }
  if (a.is_array() && b.is_array()) {
    const size_t n = std::max(a.size(), b.size());
    for (size_t i = 0; i < n; ++i) {
      const std::string p = Str(path, "[", i, "]");
      if (i >= a.size() || i >= b.size()) {
        *d = {p, i < a.size() ? a[i].dump() : "(absent)", i < b.size() ? b[i].dump() : "(absent)"};
        return;
      }
      Diff(a[i], b[i], p, d);
      if (!d->empty()) return;
    }
    return;
  }
  if (a != b) *d = {path.empty() ? "(the whole value)" : path, a.dump(), b.dump()};
}

// Every attribute of `g` as JSON (strings, numbers, booleans, arrays), except `skip`.
json AttributesJson(const store::Group& g, const std::set<std::string>& skip = {}) {
  json j = json::object();
  for (const auto& name : g.AttrNames(store::Order::kName)) {
    if (skip.count(name)) continue;
    switch (g.AttrType(name)) {
      case store::DType::kString:
        j[name] = g.GetAttr<std::string>(name);
        break;
      case store::DType::kBool:
        j[name] = g.GetAttr<bool>(name);
        break;
      case store::DType::kInt64:
      case store::DType::kInt32:
      case store::DType::kUInt8:
        j[name] = g.GetAttr<int64_t>(name);
        break;
      default: {
        double v = g.GetAttr<double>(name);
        j[name] = std::isfinite(v) ? json(v) : json(Str(v));  // NaN is not JSON
      }
    }
  }
  return j;
}

double AttrOrNaN(const store::Group& g, const std::string& name) {
  return g.HasAttr(name) ? g.GetAttr<double>(name) : std::numeric_limits<double>::quiet_NaN();
}

// The one run group of a run file.
std::string OnlyRun(const store::File& f) {
  const store::Group root = f.root();
  PC_CHECK(root.IsGroup("runs"), "'", f.path(), "' holds no /runs group; it is not a complete sweep run file");
  std::vector<std::string> runs = root.OpenGroup("runs").ListGroups();
  PC_CHECK(runs.size() == 1, "'", f.path(), "' holds ", runs.size(), " runs under /runs, expected exactly one");
  return runs[0];
}

void WriteHeader(const store::Group& root, const ResultsHeader& h) {
  root.SetAttr("sweep", h.sweep);
  root.SetAttr("sweep_yaml", h.sweep_yaml);
  root.SetAttr("conventions", h.conventions.dump());
  root.SetAttr("conventions_key", h.conventions_key);
  root.SetAttr("runs_total", h.runs_total);
  root.SetAttr("shard", h.shard);
  if (!h.primary.empty()) {
    nlohmann::json p = nlohmann::json::array();
    for (const auto& [perp, iso] : h.primary) p.push_back({perp, iso});
    root.SetAttr("primary_comparisons", p.dump());
  }
  if (!h.failed.empty()) {
    nlohmann::json f = nlohmann::json::array();
    for (const auto& [run, error] : h.failed) f.push_back({{"run", run}, {"error", error}});
    root.SetAttr("failed_runs", f.dump());
  }
}

// reference_ppl, reference_mean_nll, reference_pairs_accuracy from a /reference group.
void WriteReferenceAttrs(const store::Group& root, const store::Group& ref) {
  root.SetAttr("reference_ppl", AttrOrNaN(ref, "ppl"));
  root.SetAttr("reference_mean_nll", AttrOrNaN(ref, "mean_nll"));
  root.SetAttr("reference_pairs_accuracy",
               ref.IsGroup("pairs") ? AttrOrNaN(ref.OpenGroup("pairs"), "accuracy")
                                    : std::numeric_limits<double>::quiet_NaN());
}

// What must agree when one run name appears in two results files: the recipe and the numbers
// (timings, cache use and the compression record's clock are allowed to differ).
json RunFingerprint(const store::Group& run) {
  json j;
  j["recipe_yaml"] = run.GetAttrOr<std::string>("recipe_yaml", "");
  j["params"] = run.GetAttrOr<std::string>("params", "");
  if (run.IsGroup("downstream")) j["downstream"] = AttributesJson(run.OpenGroup("downstream"));
  if (run.IsGroup("pairs")) j["pairs"] = AttributesJson(run.OpenGroup("pairs"));
  return j;
}

struct Input {
  std::string path;
  store::File file;
  ResultsHeader header;
};

struct RunRef {
  size_t input = 0;
  std::string name;
  int64_t index = 0;
};

// The shard attribute of files merged from one sweep: "" when the shards cover the sweep.
std::string MergedShard(const std::vector<Input>& in) {
  std::set<std::pair<int, int>> shards;
  for (const auto& i : in) {
    if (i.header.shard.empty()) return "";
    shards.insert(ParseShard(i.header.shard, "'" + i.path + "' attribute shard"));
  }
  const int n = shards.begin()->second;
  bool same_n = true;
  std::set<int> ks;
  for (const auto& [k, nn] : shards) {
    same_n = same_n && nn == n;
    ks.insert(k);
  }
  if (same_n && static_cast<int>(ks.size()) == n) return "";
  std::vector<std::string> parts;
  for (const auto& [k, nn] : shards) parts.push_back(Str(k, "/", nn));
  return Join(parts, ",");
}

}  // namespace

std::string ConventionsKey(const nlohmann::json& conventions) { return Sha256Hex(conventions.dump()); }

JsonDifference FirstDifference(const nlohmann::json& a, const nlohmann::json& b) {
  JsonDifference d;
  Diff(a, b, "", &d);
  return d;
}

void CopyScalarAttributes(const store::Group& src, const store::Group& dst, const std::set<std::string>& skip) {
  for (const auto& name : src.AttrNames()) {
    if (skip.count(name)) continue;
    switch (src.AttrType(name)) {
      case store::DType::kString:
        dst.SetAttr(name, src.GetAttr<std::string>(name));
        break;
      case store::DType::kBool:
        dst.SetAttr(name, src.GetAttr<bool>(name));
        break;
      case store::DType::kInt64:
      case store::DType::kInt32:
      case store::DType::kUInt8:
        dst.SetAttr(name, src.GetAttr<int64_t>(name));
        break;
      default:
        dst.SetAttr(name, src.GetAttr<double>(name));
    }
  }
}

std::string RunFileName(int64_t index, const std::string& run) { return Str(index, "-", run, ".h5"); }

RunFileInfo ReadRunFileInfo(const std::string& path) {
  store::File f = store::File::OpenRead(path, store::kind::kSweepRun);
  RunFileInfo info;
  info.path = path;
  info.run = OnlyRun(f);
  const store::Group g = f.root().OpenGroup("runs").OpenGroup(info.run);
  info.status = g.GetAttrOr<std::string>("status", "");
  info.conventions_key = g.GetAttrOr<std::string>("conventions_key", "");
  info.recipe_yaml = g.GetAttrOr<std::string>("recipe_yaml", "");
  info.index = g.GetAttrOr<int64_t>("index", -1);
  info.error = g.GetAttrOr<std::string>("error", "");
  if (g.IsGroup("lm_eval")) info.lm_eval_sha256 = g.OpenGroup("lm_eval").GetAttrOr<std::string>("sha256", "");
  return info;
}

ResultsHeader ReadResultsHeader(const store::File& results) {
  const store::Group root = results.root();
  const std::string where = results.path();
  for (const char* a : {"sweep", "conventions", "conventions_key", "runs_total", "shard"}) {
    PC_CHECK(root.HasAttr(a), "'", where, "' has no root attribute '", a, "'; it is not a complete sweep-results file");
  }
  ResultsHeader h;
  h.sweep = root.GetAttr<std::string>("sweep");
  h.sweep_yaml = root.GetAttrOr<std::string>("sweep_yaml", "");
  h.conventions = ParseJson(root.GetAttr<std::string>("conventions"), where + " attribute conventions");
  h.conventions_key = root.GetAttr<std::string>("conventions_key");
  h.runs_total = root.GetAttr<int64_t>("runs_total");
  h.shard = root.GetAttr<std::string>("shard");
  if (root.HasAttr("primary_comparisons")) {
    const nlohmann::json p = ParseJson(root.GetAttr<std::string>("primary_comparisons"), where + " attribute primary_comparisons");
    PC_CHECK(p.is_array(), "'", where, "': attribute primary_comparisons is not a JSON list");
    for (const auto& e : p) {
      PC_CHECK(e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string(), "'", where,
               "': attribute primary_comparisons: expected [perp, iso] pairs");
      h.primary.emplace_back(e[0].get<std::string>(), e[1].get<std::string>());
    }
  }
  if (root.HasAttr("failed_runs")) {
    const nlohmann::json f = ParseJson(root.GetAttr<std::string>("failed_runs"), where + " attribute failed_runs");
    PC_CHECK(f.is_array(), "'", where, "': attribute failed_runs is not a JSON list");
    for (const auto& e : f) {
      PC_CHECK(e.is_object() && e.contains("run") && e["run"].is_string() && e.contains("error") &&
                   e["error"].is_string(),
               "'", where, "': attribute failed_runs: expected {\"run\": ..., \"error\": ...} entries");
      h.failed.emplace_back(e["run"].get<std::string>(), e["error"].get<std::string>());
    }
  }
  return h;
}

void WriteSweepResults(const std::string& out, const ResultsHeader& header, const std::string& reference_file,
                       const std::vector<std::string>& run_files, const std::function<void(size_t)>& after_copy) {
  store::StagedWriter w = store::File::CreateStaged(out, store::kind::kSweepResults, /*overwrite=*/true, "--out");
  const store::Group root = w.root();
  WriteHeader(root, header);
  {
    store::File ref = store::File::OpenRead(reference_file);
    PC_CHECK(ref.root().IsGroup("reference"), "'", reference_file, "' holds no /reference group");
    WriteReferenceAttrs(root, ref.root().OpenGroup("reference"));
    store::CopyGroup(ref.root(), "reference", root, "reference");
  }
  const store::Group runs = root.CreateGroup("runs");
  size_t copied = 0;
  for (const auto& path : run_files) {
    store::File f = store::File::OpenRead(path, store::kind::kSweepRun);
    const std::string name = OnlyRun(f);
    store::CopyGroup(f.root().OpenGroup("runs"), name, runs, name);
    ++copied;
    if (after_copy) after_copy(copied);
  }
  root.SetAttr("runs_complete", static_cast<int64_t>(copied));
  w.Commit();
}

MergeSummary MergeSweepResults(const std::vector<std::string>& inputs, const std::string& out, bool overwrite) {
  PC_CHECK(!inputs.empty(), "merge: give at least one sweep-results file");
  fs::CheckOutputPath(out, overwrite, "--out", fs::OutputKind::kFile);
  {
    std::vector<std::pair<std::string, std::string>> named;
    for (const auto& in : inputs) named.push_back({"results file", in});
    fs::CheckNotAnInput(out, "--out", named);
  }
  std::vector<Input> in;
  for (const auto& path : inputs) {
    store::File f = store::OpenUntrusted(path, store::kind::kSweepResults);  // read in a child first
    ResultsHeader h = ReadResultsHeader(f);
    in.push_back(Input{path, std::move(f), std::move(h)});
  }
  const Input& first = in.front();
  for (const auto& i : in) {
    if (i.header.conventions_key == first.header.conventions_key) continue;
    JsonDifference d = FirstDifference(first.header.conventions, i.header.conventions);
    PC_THROW("cannot merge '", i.path, "' with '", first.path, "': they were made under different conventions (",
             d.empty() ? std::string("conventions_key differs") : Str("'", d.path, "' is ", d.a, " in '", first.path,
                                                                      "' and ", d.b, " in '", i.path, "'"),
             "); only results of the same model, evaluation text, pairs and calibration can be merged");
  }
  bool one_sweep = true;
  for (const auto& i : in) one_sweep = one_sweep && i.header.sweep_yaml == first.header.sweep_yaml;

  // Runs: each name once; a name in two files must have the same contents.
  std::vector<RunRef> runs;
  std::map<std::string, size_t> seen;  // name -> position in runs
  std::map<std::string, std::set<std::string>> sweeps_of;  // name -> the sweep files (YAML) holding it
  MergeSummary summary;
  for (size_t k = 0; k < in.size(); ++k) {
    const store::Group root = in[k].file.root();
    if (!root.IsGroup("runs")) continue;
    const store::Group g = root.OpenGroup("runs");
    for (const auto& name : g.ListGroups()) {
      sweeps_of[name].insert(in[k].header.sweep_yaml);
      const store::Group run = g.OpenGroup(name);
      auto it = seen.find(name);
      if (it != seen.end()) {
        const RunRef& other = runs[it->second];
        JsonDifference d = FirstDifference(
            RunFingerprint(in[other.input].file.root().OpenGroup("runs").OpenGroup(name)), RunFingerprint(run));
        PC_CHECK(d.empty(), "cannot merge: run '", name, "' is in '", in[other.input].path, "' and in '", in[k].path,
                 "' with different contents ('", d.path, "' is ", d.a, " and ", d.b,
                 "); rename one of the runs or leave one file out");
        ++summary.duplicates;
        continue;
      }
      seen[name] = runs.size();
      runs.push_back(RunRef{k, name, run.GetAttrOr<int64_t>("index", 0)});
    }
  }
  if (one_sweep) {
    std::stable_sort(runs.begin(), runs.end(), [](const RunRef& a, const RunRef& b) { return a.index < b.index; });
  }

  ResultsHeader h;
  if (one_sweep) {
    h = first.header;
    h.shard = MergedShard(in);
  } else {
    std::vector<std::string> names;
    std::set<std::string> yamls;
    for (const auto& i : in) {
      if (!yamls.insert(i.header.sweep_yaml).second) continue;
      names.push_back(i.header.sweep);
      h.runs_total += i.header.runs_total;
      h.sweep_yaml += (h.sweep_yaml.empty() ? "" : "\n---\n") + i.header.sweep_yaml;
    }
    // A run (same name, same contents: checked above) that both sweeps hold is one run, not two.
    for (const auto& [name, sweeps] : sweeps_of) h.runs_total -= static_cast<int64_t>(sweeps.size()) - 1;
    h.runs_total = std::max<int64_t>(h.runs_total, static_cast<int64_t>(runs.size()));
    h.sweep = Join(names, "+");
    bool same_primary = true;
    for (const auto& i : in) same_primary = same_primary && i.header.primary == first.header.primary;
    if (same_primary) h.primary = first.header.primary;
    h.conventions = first.header.conventions;
    h.conventions_key = first.header.conventions_key;
    h.shard = "";
  }
  // Failed runs of every input, unless the run completed in another input.
  h.failed.clear();
  std::set<std::string> failed_seen;
  for (const auto& i : in) {
    for (const auto& [run, error] : i.header.failed) {
      if (!seen.count(run) && failed_seen.insert(run).second) h.failed.emplace_back(run, error);
    }
  }
  summary.shard = h.shard;
  summary.runs = runs.size();

  store::StagedWriter w = store::File::CreateStaged(out, store::kind::kSweepResults, overwrite, "--out");
  const store::Group root = w.root();
  WriteHeader(root, h);
  const store::Group ref_src = first.file.root();
  if (ref_src.IsGroup("reference")) {
    WriteReferenceAttrs(root, ref_src.OpenGroup("reference"));
    store::CopyGroup(ref_src, "reference", root, "reference");
  }
  const store::Group dst = root.CreateGroup("runs");
  for (const auto& r : runs) store::CopyGroup(in[r.input].file.root().OpenGroup("runs"), r.name, dst, r.name);
  root.SetAttr("runs_complete", static_cast<int64_t>(runs.size()));
  w.Commit();
  return summary;
}

}  // namespace pc::pipeline
