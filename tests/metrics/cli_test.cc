// `perpcomp measure` and `perpcomp eval` end to end on stories260K and a fake-quantized copy:
// the HDF5 layout, the JSON keys, and every refusal with its message.
#include <catch2/catch.hpp>

#include <fstream>
#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "core/sha256.h"
#include "metrics/site_columns.h"
#include "metrics/sites.h"
#include "model/model.h"
#include "store/file.h"
#include "tests/metrics/metrics_test_util.h"
#include "tests/test_support.h"

using Catch::Matchers::Contains;

namespace {

struct Fixture {
  std::string dir, ref, comp, text, cache;
};

// stories260K, its 4-bit fake-quantized copy with a compression record, a story text.
Fixture MakeFixture() {
  Fixture f;
  f.dir = pc::test::TempDir("cli");
  f.ref = pc::test::Stories260KDir();
  f.comp = pc::test::EditedCopy(
      f.ref,
      [](pc::Model& m) {
        pc::test::FakeQuantize(m, 4, 16);
        m.mutable_config().raw["perpcomp_compression"] = {{"recipe", "test-rtn-w4g16"}, {"bits", 4}};
      },
      "rtn");
  f.text = f.dir + "/story.txt";
  std::ofstream(f.text) << pc::test::StoryText();
  f.cache = f.dir + "/cache";
  return f;
}

std::string Q(const std::string& s) { return "'" + s + "'"; }

}  // namespace

TEST_CASE("perpcomp measure writes every aggregate, the conventions and per-token values", "[metrics][shared][cli][slow]") {
  PC_REQUIRE_SHARED();
  Fixture f = MakeFixture();
  const std::string out = f.dir + "/m.h5";
  const std::string common = " --reference " + Q(f.ref) + " --compressed " + Q(f.comp) + " --text " + Q(f.text) +
                             " --seq-len 64 --max-windows 4 --cache " + Q(f.cache);
  pc::test::RunResult r = pc::test::RunPerpcomp("measure" + common + " --out " + Q(out) + " --per-token");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("layer 4") && Contains("logits") && Contains("KL(reference || compressed)"));

  auto ref = pc::Model::Load(f.ref);
  const int64_t entries = pc::SiteIndex(*ref).size();
  {
    pc::store::File file = pc::store::File::OpenRead(out, pc::store::kind::kMeasure);
    pc::store::Group run = file.root().OpenGroup("runs/model");
    CHECK(run.GetAttr<std::string>("text_sha256") == pc::Sha256File(f.text));
    CHECK(run.GetAttr<int64_t>("seq_len") == 64);
    CHECK(run.GetAttr<int64_t>("windows") == 4);
    CHECK(run.GetAttr<std::string>("reference") == f.ref);
    CHECK_THAT(run.GetAttr<std::string>("compression"), Contains("test-rtn-w4g16"));
    CHECK_FALSE(run.GetAttr<bool>("cache_hit"));
    pc::store::Table sites = run.ReadTable("sites");
    CHECK(sites.rows() == entries);
    CHECK(sites.Get<std::string>("kind")[0] == "accumulated");
    // Exactly the columns metrics/site_columns.h declares, after the key columns, in order.
    std::vector<std::string> expect = {"name", "site", "layer", "role", "kind", "frame", "dim",
                                       "tokens", "skipped_tokens", "last_tokens"};
    for (const pc::SiteColumn& c : pc::kSiteValueColumns) expect.push_back(c.name);
    for (int q = 0; q < 3; ++q) {
      for (int l = 0; l < 3; ++l) expect.push_back(pc::SitePercentileColumn(q, l));
    }
    CHECK(sites.column_names() == expect);
    CHECK(pc::SitePercentileColumn(2, 2) == "p99_rel_perp");
    const auto& perp = sites.Get<double>("ratio_perp");
    const auto& iso = sites.Get<double>("ratio_iso");
    const auto& par = sites.Get<double>("ratio_par");
    for (int64_t i = 0; i < sites.rows(); ++i) CHECK(iso[i] == Approx(par[i] + perp[i]).epsilon(1e-9));
    pc::store::Table weights = run.ReadTable("weights");
    CHECK(weights.rows() == 5 * 7 + 1);
    CHECK(weights.column_names() ==
          std::vector<std::string>{"name", "layer", "role", "numel", "rel_fro", "sparsity", "ref_sparsity"});
    CHECK(weights.Get<double>("rel_fro")[0] > 0);
    CHECK(run.OpenGroup("downstream").GetAttr<double>("kl_mean") > 0);
    pc::store::Group pt = run.OpenGroup("per_token");
    CHECK(pt.Info("perp").shape == pc::store::Shape({entries, 4, 64}));
    CHECK(pt.Info("kl").shape == pc::store::Shape({4, 63}));
    CHECK(pt.Info("tokens").shape == pc::store::Shape({4, 64}));
  }

  // The reference is cached: a second run (another name, appended) hits the cache.
  r = pc::test::RunPerpcomp("measure" + common + " --out " + Q(out) + " --append --run second -q");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  {
    pc::store::File file = pc::store::File::OpenRead(out, pc::store::kind::kMeasure);
    auto runs = file.root().OpenGroup("runs").ListGroups(pc::store::Order::kName);
    CHECK(runs == std::vector<std::string>{"model", "second"});
    CHECK(file.root().OpenGroup("runs/second").GetAttr<bool>("cache_hit"));
    CHECK_FALSE(file.root().OpenGroup("runs/second").GetAttr<bool>("per_token"));
  }
  // Refusals, before any work.
  r = pc::test::RunPerpcomp("measure" + common + " --out " + Q(out));
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("--out '" + out + "' already exists; pass --overwrite to replace it or --append"));
  r = pc::test::RunPerpcomp("measure" + common + " --out " + Q(out) + " --append --run second");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("already holds run 'second'; pass --overwrite to replace that run"));

  std::string not_h5 = f.dir + "/notes.h5";
  std::ofstream(not_h5) << "not hdf5";
  r = pc::test::RunPerpcomp("measure" + common + " --out " + Q(not_h5) + " --overwrite");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("refusing to overwrite '" + not_h5 + "'") && Contains("is not an HDF5 file"));
  std::string eval_file = f.dir + "/e.h5";
  pc::store::File::Create(eval_file, pc::store::kind::kEval).Close();
  r = pc::test::RunPerpcomp("measure" + common + " --out " + Q(eval_file) + " --append");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("refusing to append to '" + eval_file + "'") &&
                        Contains("expected a 'measure' file, got 'eval'"));
  std::string newer = f.dir + "/newer.h5";
  {
    pc::store::File n = pc::store::File::Create(newer, pc::store::kind::kMeasure);
    n.root().SetAttr("perpcomp_schema", pc::store::kSchemaVersion + 1);
    n.Close();
  }
  r = pc::test::RunPerpcomp("measure" + common + " --out " + Q(newer) + " --append");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("written by a newer perpcomp"));
  r = pc::test::RunPerpcomp("measure" + common + " --out " + Q(newer) + " --overwrite");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("refusing to overwrite"));
  CHECK(pc::store::File::OpenRead(eval_file).kind() == "eval");  // untouched
}

TEST_CASE("perpcomp measure: bad inputs are named", "[metrics][shared][cli]") {
  PC_REQUIRE_SHARED();
  Fixture f = MakeFixture();
  const std::string out = f.dir + "/m.h5";
  pc::test::RunResult r = pc::test::RunPerpcomp("measure --reference " + Q(f.ref) + " --compressed " + Q(f.comp) +
                                                " --text " + Q(f.text) + " --seq-len 100000 --out " + Q(out) +
                                                " --no-cache");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains(f.text + ": the text gives") && Contains("fewer than one window of --seq-len 100000"));
  CHECK_FALSE(pc::fs::Exists(out));

  std::string gpt2 = pc::test::SharedPath("models/tiny-random-gpt2");
  r = pc::test::RunPerpcomp("measure --reference " + Q(f.ref) + " --compressed " + Q(gpt2) + " --text " + Q(f.text) +
                            " --seq-len 32 --out " + Q(out) + " --no-cache");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("reference '" + f.ref + "' and compressed '" + gpt2 +
                             "' differ in architecture: config field 'model_type' is llama vs gpt2"));
  CHECK_FALSE(pc::fs::Exists(out));
}

TEST_CASE("perpcomp eval: reference, minimal pairs, lm-eval import, HDF5 and JSON keys", "[metrics][shared][cli]") {
  PC_REQUIRE_SHARED();
  Fixture f = MakeFixture();
  std::string pairs = f.dir + "/mine.jsonl";
  std::ofstream(pairs)
      << R"({"sentence_good": "She was very happy.", "sentence_bad": "happy very was She.", "linguistics_term": "order"})"
      << "\n"
      << R"({"sentence_good": "The dog ran.", "sentence_bad": "The dog ran.", "linguistics_term": "order"})" << "\n";
  std::string lm = f.dir + "/lm.json";
  std::ofstream(lm) << R"({"results": {"blimp_x": {"acc,none": 0.75, "alias": "x"}}})";
  const std::string out = f.dir + "/e.h5";
  pc::test::RunResult r = pc::test::RunPerpcomp(
      "eval --model " + Q(f.comp) + " --reference " + Q(f.ref) + " --text " + Q(f.text) +
      " --seq-len 64 --max-windows 4 --pairs " + Q(pairs) + " --import-lm-eval " + Q(lm) + " --out " + Q(out) +
      " --cache " + Q(f.cache) + " --json");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  nlohmann::json j = nlohmann::json::parse(r.out);
  for (const char* k : {"ppl", "mean_nll", "tokens", "windows", "seq_len", "text_sha256", "model", "reference_ppl",
                        "delta_nll", "kl_mean", "kl_p90", "kl_p99", "top1_agreement", "pairs", "lm_eval", "out"}) {
    CHECK(j.contains(k));
  }
  CHECK(j["tokens"] == 4 * 63);
  CHECK(j["kl_mean"].get<double>() > 0);
  CHECK(j["pairs"]["files"]["mine"]["pairs"] == 2);
  CHECK(j["pairs"]["ties"] == 1);
  CHECK(j["lm_eval"]["blimp_x"]["acc,none"] == 0.75);
  // The parts' wall times: disjoint parts of the total, every part that ran took some time.
  REQUIRE(j.contains("seconds"));
  for (const char* k : {"tokenize", "load", "forward", "total"}) {
    INFO(k);
    REQUIRE(j["seconds"].contains(k));
    CHECK(j["seconds"][k].get<double>() > 0);
  }
  CHECK(j["seconds"]["tokenize"].get<double>() + j["seconds"]["load"].get<double>() +
            j["seconds"]["forward"].get<double>() <=
        j["seconds"]["total"].get<double>() + 1e-9);
  {
    pc::store::File file = pc::store::File::OpenRead(out, pc::store::kind::kEval);
    pc::store::Group run = file.root().OpenGroup("runs/model");
    CHECK(run.GetAttr<double>("ppl") == Approx(j["ppl"].get<double>()));
    CHECK(run.GetAttr<std::string>("reference") == f.ref);
    CHECK(run.OpenGroup("per_token").Info("kl").shape == pc::store::Shape({4, 63}));
    CHECK(run.OpenGroup("per_token").Info("nll").shape == pc::store::Shape({4, 63}));
    CHECK(run.OpenGroup("downstream").GetAttr<double>("kl_mean") == Approx(j["kl_mean"].get<double>()));
    CHECK(run.OpenGroup("pairs").ReadTable("items").rows() == 2);
    CHECK(run.OpenGroup("pairs").GetAttr<int64_t>("ties") == 1);
    CHECK(run.OpenGroup("lm_eval").ReadTable("scores").Get<std::string>("filter")[0] == "none");
    for (const char* k : {"tokenize", "load", "forward", "total"}) {
      INFO(k);
      CHECK(run.GetAttr<double>(std::string("seconds_") + k) == Approx(j["seconds"][k].get<double>()));
    }
  }
  // Plain perplexity keeps its keys.
  r = pc::test::RunPerpcomp("eval --model " + Q(f.ref) + " --text " + Q(f.text) + " --seq-len 64 --json");
  REQUIRE(r.exit_code == 0);
  j = nlohmann::json::parse(r.out);
  for (const char* k : {"ppl", "mean_nll", "tokens", "windows", "seq_len", "text_sha256", "model"}) CHECK(j.contains(k));
  CHECK_FALSE(j.contains("kl_mean"));
  for (const char* k : {"tokenize", "load", "forward", "total"}) CHECK(j["seconds"][k].get<double>() >= 0);

  // Pairs errors.
  std::string bad = f.dir + "/bad.jsonl";
  std::ofstream(bad) << R"({"sentence_good": "a", "sentence_bad": "b"})" << "\n" << R"({"sentence_bad": "b"})" << "\n";
  r = pc::test::RunPerpcomp("eval --model " + Q(f.ref) + " --pairs " + Q(bad));
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains(bad + " line 2: missing key 'sentence_good'"));
  r = pc::test::Run("PERPCOMP_SHARED=/nonexistent '" + pc::test::PerpcompBin() + "' eval --model " + Q(f.ref) +
                    " --pairs blimp-sva");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("--pairs blimp-sva: the BLiMP data is not at '/nonexistent/data/tasks/blimp/data'"));
  r = pc::test::RunPerpcomp("eval --model " + Q(f.ref));
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("give --text (perplexity), --pairs (minimal pairs) or --import-lm-eval"));
}
