// pipeline/sweep_results.h without a model: conventions keys and differences, results files
// rebuilt from run files, and every refusal of `perpcomp merge`.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "core/sha256.h"
#include "pipeline/sweep_results.h"
#include "store/file.h"
#include "store/table.h"
#include "tests/sweep/sweep_test_util.h"

using Catch::Matchers::Contains;
using nlohmann::json;
using pc::pipeline::FirstDifference;

namespace {

std::string Q(const std::string& s) { return "'" + s + "'"; }

json Conventions(const std::string& model_hash = "abc", int64_t windows = 8) {
  return json{{"model", "/m"},
              {"model_hash", model_hash},
              {"eval_text", "/t.txt"},
              {"eval_sha256", "e"},
              {"seq_len", 32},
              {"windows", windows},
              {"pairs", json::array({{{"file", "/p.jsonl"}, {"sha256", "p"}}})},
              {"calib", {{"source", "/c.txt"}, {"sha256", "c"}, {"samples", 8}, {"seq_len", nullptr}, {"seed", nullptr}}},
              {"metrics_conventions", 1},
              {"perpcomp", "perpcomp 0.1.0"}};
}

struct FakeRun {
  std::string name;
  int64_t index;
  double delta_nll;
};

// A run file as the sweep writes it (the parts merge and rebuild look at).
std::string WriteRunFile(const std::string& dir, const FakeRun& r, const json& conventions) {
  const std::string path = dir + "/" + pc::pipeline::RunFileName(r.index, r.name);
  pc::store::StagedWriter w = pc::store::File::CreateStaged(path, pc::store::kind::kSweepRun, true);
  pc::store::Group g = w.root().CreateGroup("runs").CreateGroup(r.name);
  g.SetAttr("run", r.name);
  g.SetAttr("index", r.index);
  g.SetAttr("recipe_yaml", "name: '" + r.name + "'\nmethod: 'rtn'\n");
  g.SetAttr("conventions", conventions.dump());
  g.SetAttr("conventions_key", pc::pipeline::ConventionsKey(conventions));
  g.SetAttr("status", "complete");
  g.SetAttr("seconds_compress", 1.5);
  pc::store::Group d = g.CreateGroup("downstream");
  d.SetAttr("delta_nll", r.delta_nll);
  d.SetAttr("kl_mean", r.delta_nll * 2);
  w.Commit();
  return path;
}

std::string WriteReference(const std::string& dir) {
  const std::string path = dir + "/reference.h5";
  pc::store::StagedWriter w = pc::store::File::CreateStaged(path, pc::store::kind::kEval, true);
  pc::store::Group g = w.root().CreateGroup("reference");
  g.SetAttr("ppl", 12.5);
  g.SetAttr("mean_nll", std::log(12.5));
  w.Commit();
  return path;
}

// A results file of `runs` under `conventions` (shard "" or "K/N").
std::string WriteResults(const std::string& dir, const std::string& name, const std::vector<FakeRun>& runs,
                         const json& conventions, const std::string& shard = "", int64_t total = 3,
                         const std::string& sweep_yaml = "name: fake\n") {
  const std::string sub = pc::test::TempDir("merge-" + name);
  std::vector<std::string> files;
  for (const auto& r : runs) files.push_back(WriteRunFile(sub, r, conventions));
  pc::pipeline::ResultsHeader h;
  h.sweep = "fake";
  h.sweep_yaml = sweep_yaml;
  h.conventions = conventions;
  h.conventions_key = pc::pipeline::ConventionsKey(conventions);
  h.runs_total = total;
  h.shard = shard;
  const std::string out = dir + "/" + name + ".h5";
  pc::pipeline::WriteSweepResults(out, h, WriteReference(sub), files);
  return out;
}

}  // namespace

TEST_CASE("sweep results: conventions keys and the first difference", "[sweep]") {
  const json a = Conventions();
  CHECK(pc::pipeline::ConventionsKey(a) == pc::Sha256Hex(a.dump()));
  CHECK(pc::pipeline::ConventionsKey(a) == pc::pipeline::ConventionsKey(json::parse(a.dump())));
  CHECK(FirstDifference(a, a).empty());
  auto d = FirstDifference(a, Conventions("xyz"));
  CHECK(d.path == "model_hash");
  CHECK(d.a == "\"abc\"");
  CHECK(d.b == "\"xyz\"");
  json b = a;
  b["calib"]["samples"] = 16;
  b["windows"] = 4;
  d = FirstDifference(a, b);  // keys in order: calib before windows
  CHECK(d.path == "calib.samples");
  CHECK(d.a == "8");
  CHECK(d.b == "16");
  json c = a;
  c["pairs"].push_back({{"file", "/q.jsonl"}, {"sha256", "q"}});
  d = FirstDifference(a, c);
  CHECK(d.path == "pairs[1]");
  CHECK(d.a == "(absent)");
  json e = a;
  e.erase("perpcomp");
  CHECK(FirstDifference(a, e).path == "perpcomp");
  CHECK(pc::pipeline::RunFileName(3, "awq-w4g128") == "3-awq-w4g128.h5");
}

TEST_CASE("sweep results: rebuilt from run files, merge orders runs by index", "[sweep]") {
  const std::string dir = pc::test::TempDir("merge-ok");
  const json conv = Conventions();
  const std::string s0 = WriteResults(dir, "s0", {{"a", 0, 0.1}, {"c", 2, 0.3}}, conv, "0/2");
  const std::string s1 = WriteResults(dir, "s1", {{"b", 1, 0.2}}, conv, "1/2");
  {
    pc::store::File f = pc::store::File::OpenRead(s0, pc::store::kind::kSweepResults);
    pc::pipeline::ResultsHeader h = pc::pipeline::ReadResultsHeader(f);
    CHECK(h.shard == "0/2");
    CHECK(h.runs_total == 3);
    CHECK(f.root().GetAttr<int64_t>("runs_complete") == 2);
    CHECK(f.root().GetAttr<double>("reference_ppl") == 12.5);
    CHECK(std::isnan(f.root().GetAttr<double>("reference_pairs_accuracy")));
  }
  const std::string all = dir + "/all.h5";
  auto s = pc::pipeline::MergeSweepResults({s1, s0}, all, false);
  CHECK(s.runs == 3);
  CHECK(s.shard.empty());
  CHECK(pc::test::ResultRuns(all) == std::vector<std::string>{"a", "b", "c"});
  pc::store::File f = pc::store::File::OpenRead(all, pc::store::kind::kSweepResults);
  CHECK(f.root().GetAttr<std::string>("shard").empty());
  CHECK(f.root().GetAttr<int64_t>("runs_complete") == 3);
  CHECK(f.root().OpenGroup("runs/b/downstream").GetAttr<double>("delta_nll") == 0.2);
  CHECK(f.root().IsGroup("reference"));

  // A run in two files with different numbers (another seconds_compress alone would be fine).
  const std::string other = WriteResults(dir, "other", {{"b", 1, 0.25}}, conv, "1/2");
  CHECK_THROWS_WITH(pc::pipeline::MergeSweepResults({s0, s1, other}, dir + "/x.h5", false),
                    Contains("run 'b' is in") && Contains("s1.h5") && Contains("other.h5") &&
                        Contains("different contents") && Contains("'downstream.delta_nll' is 0.2 and 0.25"));
}

TEST_CASE("perpcomp merge refuses other models, other conventions, and files that are not sweep results", "[sweep]") {
  const std::string dir = pc::test::TempDir("merge-bad");
  const std::string a = WriteResults(dir, "a", {{"r1", 0, 0.1}}, Conventions("abc"));
  const std::string other_model = WriteResults(dir, "b", {{"r2", 1, 0.2}}, Conventions("def"));
  const std::string other_windows = WriteResults(dir, "c", {{"r3", 2, 0.3}}, Conventions("abc", 4));

  auto r = pc::test::RunPerpcomp("merge " + Q(a) + " " + Q(other_model) + " --out " + Q(dir + "/m.h5"));
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("cannot merge") && Contains("b.h5") && Contains("a.h5") &&
                        Contains("'model_hash' is \"abc\"") && Contains("\"def\""));
  r = pc::test::RunPerpcomp("merge " + Q(a) + " " + Q(other_windows) + " --out " + Q(dir + "/m.h5"));
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("'windows' is 8") && Contains("and 4 in"));

  // Not sweep results: a measure file, and a file that is not HDF5.
  {
    pc::store::StagedWriter w = pc::store::File::CreateStaged(dir + "/measure.h5", pc::store::kind::kMeasure, true);
    w.Commit();
  }
  r = pc::test::RunPerpcomp("merge " + Q(a) + " " + Q(dir + "/measure.h5") + " --out " + Q(dir + "/m.h5"));
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("measure.h5") && Contains("expected a 'sweep-results' file, got 'measure'"));
  const std::string text = pc::test::WriteTextFile(dir, "notes.h5", "hello");
  r = pc::test::RunPerpcomp("merge " + Q(text) + " --out " + Q(dir + "/m.h5"));
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("notes.h5' is not an HDF5 file"));
  CHECK(pc::test::Temporaries(dir).empty());
  CHECK(pc::test::Run("test -e " + Q(dir + "/m.h5")).exit_code != 0);

  r = pc::test::RunPerpcomp("merge --out " + Q(dir + "/m.h5"));
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("give the sweep-results files"));
}

// ---- Reliability, round two (docs/RELIABILITY.md "Hostile use of the commands") ----

TEST_CASE("merge of two different sweeps: a run both hold counts once in runs_total", "[sweep][reliability]") {
  const std::string dir = pc::test::TempDir("merge-two-sweeps");
  const json conv = Conventions();
  // Sweep A has 4 runs (a, b, c, d), sweep B 3 (c, d, e): 5 distinct runs, not 7.
  const std::string a = WriteResults(dir, "a", {{"a", 0, 0.1}, {"b", 1, 0.2}, {"c", 2, 0.3}, {"d", 3, 0.4}}, conv, "",
                                     4, "name: A\n");
  const std::string b = WriteResults(dir, "b", {{"c", 2, 0.3}, {"d", 3, 0.4}, {"e", 4, 0.5}}, conv, "", 3, "name: B\n");
  const std::string all = dir + "/all.h5";
  auto s = pc::pipeline::MergeSweepResults({a, b}, all, false);
  CHECK(s.runs == 5);
  CHECK(s.duplicates == 2);
  pc::store::File f = pc::store::File::OpenRead(all, pc::store::kind::kSweepResults);
  CHECK(f.root().GetAttr<int64_t>("runs_total") == 5);
  CHECK(f.root().GetAttr<int64_t>("runs_complete") == 5);
}

namespace {

// A copy of `src` with `edit` applied to it (HDF5 through the store, opened for writing).
std::string Edited(const std::string& src, const std::string& name,
                   const std::function<void(const pc::store::Group& root)>& edit) {
  const std::string out = pc::fs::Parent(src) + "/" + name;
  std::filesystem::copy_file(src, out, std::filesystem::copy_options::overwrite_existing);
  pc::store::File f = pc::store::File::OpenReadWrite(out, pc::store::kind::kSweepResults);
  edit(f.root());
  f.Close();
  return out;
}


}  // namespace

TEST_CASE("rank refuses a results file whose runs_complete exceeds its runs, or whose delta_nll is text",
          "[sweep][reliability]") {
  const std::string dir = pc::test::TempDir("results-hostile");
  const json conv = Conventions();
  const std::string fake = WriteResults(dir, "fake", {{"a", 0, 0.1}, {"b", 1, 0.2}, {"c", 2, 0.3}}, conv);
  // The fake runs completed with what rank needs besides the downstream scores.
  const std::string ok = Edited(fake, "ok.h5", [](const pc::store::Group& root) {
    for (const auto& name : root.OpenGroup("runs").ListGroups()) {
      const pc::store::Group g = root.OpenGroup("runs/" + name);
      g.SetAttr("recipe", name);
      g.SetAttr("method", "rtn");
      g.SetAttr("family", "rtn");
      pc::store::Table sites;
      sites.AddColumn<std::string>("name", {"model.layers.0.mlp.down_proj"});
      sites.AddColumn<double>("perp", {0.5});
      g.WriteTable("sites", sites);
    }
  });
  const std::string more = Edited(ok, "more.h5", [](const pc::store::Group& root) {
    root.SetAttr("runs_complete", int64_t{9});
  });
  auto r = pc::test::RunPerpcomp("rank " + Q(more) + " --out " + Q(dir + "/r1"));
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("more.h5: runs_complete is 9 but /runs holds 3 runs; the file is damaged"));
  const std::string text = Edited(ok, "text.h5", [](const pc::store::Group& root) {
    pc::store::Group d = root.OpenGroup("runs/b/downstream");
    d.SetAttr("delta_nll", std::string("0.2"));
  });
  r = pc::test::RunPerpcomp("rank " + Q(text) + " --out " + Q(dir + "/r2"));
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("/runs/b/downstream: attribute 'delta_nll' is string, expected a number (float64)"));
}

TEST_CASE("a full disk or a file-size limit during merge ends with a clear error and removes the temporary",
          "[sweep][reliability]") {
  const std::string dir = pc::test::TempDir("merge-full");
  const json conv = Conventions();
  std::vector<FakeRun> many;
  for (int i = 0; i < 20; ++i) many.push_back({"run" + std::to_string(i), i, 0.01 * i});
  // Runs with per-token data (16 MB in all), so that the limit is met while H5Ocopy copies them
  // (small files failed only at the close, cleanly; these made libhdf5 segfault, exit 139).
  const std::string a = Edited(WriteResults(dir, "small", many, conv, "", 20), "a.h5", [](const pc::store::Group& root) {
    for (const auto& name : root.OpenGroup("runs").ListGroups()) {
      root.OpenGroup("runs/" + name).WriteVector("per_token", std::vector<float>(200000, 0.5f));
    }
  });
  const int64_t size = pc::fs::FileSize(a);
  const std::string out_dir = dir + "/out";
  pc::fs::MakeDirs(out_dir);

  // A file-size limit below the merged file's size (EFBIG).
  auto r = pc::test::RunWithFileLimit(Q(pc::test::PerpcompBin()) + " merge " + Q(a) + " --out " + Q(out_dir + "/m.h5"),
                            static_cast<rlim_t>(size / 2));
  INFO(r.err);
  CHECK(r.exit_code == 1);  // 139 was the segfault inside libhdf5's object copy
  CHECK_THAT(r.err, Contains("file size limit reached writing '" + out_dir + "/m.h5'") &&
                        Contains("File too large") && Contains("the temporary file was removed"));
  CHECK(pc::test::Temporaries(out_dir).empty());
  CHECK_FALSE(pc::fs::Exists(out_dir + "/m.h5"));

  // A full file system (ENOSPC): a tmpfs smaller than the merged file, where mounting is allowed.
  const std::string small = dir + "/tmpfs";
  pc::fs::MakeDirs(small);
  const std::string opts = "size=" + std::to_string(std::max<int64_t>(size / 2, 4096));
  PC_SKIP_IF(::mount("tmpfs", small.c_str(), "tmpfs", 0, opts.c_str()) != 0,
             "cannot mount a small tmpfs here (not root, or no permission); the ENOSPC case is not run");
  r = pc::test::RunPerpcomp("merge " + Q(a) + " --out " + Q(small + "/m.h5"));
  const auto temporaries = pc::test::Temporaries(small);
  const bool final_exists = pc::fs::Exists(small + "/m.h5");
  ::umount(small.c_str());
  INFO(r.err);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("no space left writing '" + small + "/m.h5'") && Contains("No space left on device"));
  CHECK(temporaries.empty());
  CHECK_FALSE(final_exists);
}
