#include "tests/reports/sweep_fixture.h"

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "core/sha256.h"
#include "metrics/site_columns.h"
#include "store/file.h"
#include "tests/reports/reports_test_support.h"

namespace pc::test {
namespace {

constexpr int64_t kWindows = 4, kSeqLen = 64;
const char* const kLinearRoles[] = {"q", "k", "v", "o", "gate", "up", "down"};

std::string LinearName(int layer, const std::string& role) {
  const bool attn = role == "q" || role == "k" || role == "v" || role == "o";
  const std::string proj = role == "o" ? "o_proj" : role + "_proj";
  return "model.layers." + std::to_string(layer) + (attn ? ".self_attn." : ".mlp.") + proj;
}

// The rows of a measure `sites` table in forward order (metrics/sites.cc).
std::vector<FixtureSiteRow> SiteRows(const SweepFixture& f) {
  std::vector<FixtureSiteRow> rows;
  auto add = [&](const std::string& name, const std::string& site, int64_t layer, const std::string& role) {
    const bool update = site == "attn_update" || site == "mlp_update";
    for (const char* kind : {"accumulated", "local"}) {
      for (const char* frame : {"self", "incoming"}) {
        if (std::string(frame) == "incoming" && !update) continue;
        rows.push_back({name, site, role, kind, frame, layer});
      }
    }
  };
  for (int l = 0; l < f.layers; ++l) {
    for (const char* role : kLinearRoles) add(LinearName(l, role), "linear", l, role);
    for (const char* site : {"attn_update", "mlp_update", "block_output"}) {
      add("layers." + std::to_string(l) + "." + site, site, l, "");
    }
  }
  if (f.final_norm) add("final_norm", "final_norm", -1, "");
  add("logits", "logits", -1, "");
  return rows;
}

int RoleIndex(const std::string& role) {
  for (int k = 0; k < 7; ++k) {
    if (role == kLinearRoles[k]) return k;
  }
  return 0;
}

// Every float column of one row, from the run's knobs.
std::map<std::string, double> RowValues(const SweepFixture& f, size_t run_index, const FixtureSiteRow& row) {
  const FixtureRun& run = f.runs[run_index];
  double scale = row.layer >= 0 ? double(row.layer + 1) / double(f.layers) : 1.2;
  if (row.site == "attn_update") scale *= 0.6;
  if (row.site == "mlp_update") scale *= 0.8;
  if (row.site == "linear") scale *= 0.3 * (1 + 0.1 * RoleIndex(row.role));
  if (row.site == "final_norm") scale *= 1.1 / 1.2;
  if (row.site == "logits") scale *= 1.5 / 1.2;
  if (row.kind == "local") scale *= 0.5;
  if (row.frame == "incoming") scale *= 1.3;
  std::map<std::string, double> v;
  const double ref_sq = 4.0 + double(std::max<int64_t>(row.layer, 0));
  // Layers before the last vary per run (so mean, final and max differ); the last layer is exactly the knob.
  const bool last = row.layer == f.layers - 1;
  const double wobble = last || row.layer < 0 ? 0.0 : 0.3 * std::sin(1.7 * double(run_index) + 0.9 * double(row.layer));
  v["ratio_par"] = run.par * scale * (1 + wobble);
  v["ratio_perp"] = run.perp * scale * (1 - wobble);
  v["ratio_iso"] = v["ratio_par"] + v["ratio_perp"];
  v["ratio_p"] = -std::sqrt(v["ratio_par"]);
  for (const char* q : {"iso", "par", "perp", "p"}) {
    const std::string r = std::string("ratio_") + q;
    v[std::string("mean_rel_") + q] = v[r] * 1.05;
    v[std::string("mean_") + q] = v[r] * (std::string(q) == "p" ? std::sqrt(ref_sq) : ref_sq);
  }
  v["mean_ref_sq"] = ref_sq;
  v["mean_cos"] = 1 - v["ratio_perp"] / 2;
  v["mean_norm_ratio"] = 1 + v["ratio_p"];
  for (const char* q : {"iso", "par", "perp"}) {
    const double m = v[std::string("mean_rel_") + q];
    v[std::string("p50_rel_") + q] = m * 0.7;
    v[std::string("p90_rel_") + q] = m * 1.8;
    v[std::string("p99_rel_") + q] = m * 3.0;
    v[std::string("mean_relnorm_") + q] = std::sqrt(m);  // the paper's norm forms
    v[std::string("last_relnorm_") + q] = std::sqrt(m) * 1.1;
  }
  return v;
}

// Every value column a measure file's sites table has (metrics/site_columns.h); RowValues must give
// each of them (std::map::at throws when a declared column is missing from the fixture).
std::vector<std::string> FloatColumns() {
  std::vector<std::string> out;
  for (const SiteColumn& c : kSiteValueColumns) out.push_back(c.name);
  for (int q = 0; q < 3; ++q) {
    for (int l = 0; l < 3; ++l) out.push_back(SitePercentileColumn(q, l));
  }
  return out;
}

void WriteSites(const store::Group& g, const SweepFixture& f, size_t run_index) {
  const std::vector<FixtureSiteRow> rows = SiteRows(f);
  std::vector<std::string> name, site, role, kind, frame;
  std::vector<int64_t> layer, dim, tokens, skipped;
  std::map<std::string, std::vector<double>> cols;
  const std::vector<std::string> float_columns = FloatColumns();
  for (const FixtureSiteRow& r : rows) {
    name.push_back(r.name);
    site.push_back(r.site);
    role.push_back(r.role);
    kind.push_back(r.kind);
    frame.push_back(r.frame);
    layer.push_back(r.layer);
    dim.push_back(r.site == "logits" ? 512 : 64);
    tokens.push_back(kWindows * kSeqLen);
    skipped.push_back(0);
    std::map<std::string, double> v = RowValues(f, run_index, r);
    for (const std::string& c : float_columns) {
      double value = v.at(c);
      if (f.site_value) {
        if (auto o = f.site_value(run_index, r, c)) value = *o;
      }
      cols[c].push_back(value);
    }
  }
  store::Table t;
  t.AddColumn("name", name).AddColumn("site", site).AddColumn("layer", layer).AddColumn("role", role);
  t.AddColumn("kind", kind).AddColumn("frame", frame).AddColumn("dim", dim);
  t.AddColumn("tokens", tokens).AddColumn("skipped_tokens", skipped);
  for (const std::string& c : float_columns) t.AddColumn(c, cols[c]);
  g.WriteTable("sites", t);
}

void WriteWeights(const store::Group& g, const SweepFixture& f, const FixtureRun& run) {
  std::vector<std::string> name, role;
  std::vector<int64_t> layer, numel;
  std::vector<double> rel_fro, sparsity, ref_sparsity;
  const bool pruning = run.family == "pruning";
  for (int l = 0; l < f.layers; ++l) {
    for (const char* r : kLinearRoles) {
      name.push_back(LinearName(l, r));
      role.push_back(r);
      layer.push_back(l);
      numel.push_back(64 * 64);
      rel_fro.push_back(run.rel_fro * double(l + 1) / double(f.layers) * (1 + 0.1 * RoleIndex(r)));
      sparsity.push_back(pruning ? 0.5 : 0.0);
      ref_sparsity.push_back(0.0);
    }
  }
  name.push_back("lm_head");
  role.push_back("");
  layer.push_back(-1);
  numel.push_back(512 * 64);
  rel_fro.push_back(0.0);
  sparsity.push_back(0.0);
  ref_sparsity.push_back(0.0);
  store::Table t;
  t.AddColumn("name", name).AddColumn("layer", layer).AddColumn("role", role).AddColumn("numel", numel);
  t.AddColumn("rel_fro", rel_fro).AddColumn("sparsity", sparsity).AddColumn("ref_sparsity", ref_sparsity);
  g.WriteTable("weights", t);
}

constexpr double kRefMeanNll = 2.5, kRefPairsAccuracy = 0.9;

void WriteDownstream(const store::Group& g, const FixtureRun& run) {
  const store::Group d = g.CreateGroup("downstream");
  const double kl = 0.9 * run.delta_nll + 0.001;
  d.SetAttr("tokens", int64_t(kWindows * (kSeqLen - 1)));
  d.SetAttr("ref_mean_nll", kRefMeanNll);
  d.SetAttr("mean_nll", kRefMeanNll + run.delta_nll);
  d.SetAttr("delta_nll", run.delta_nll);
  d.SetAttr("ref_ppl", std::exp(kRefMeanNll));
  d.SetAttr("ppl", std::exp(kRefMeanNll + run.delta_nll));
  d.SetAttr("kl_mean", kl);
  d.SetAttr("kl_p50", 0.5 * kl);
  d.SetAttr("kl_p90", 2 * kl);
  d.SetAttr("kl_p99", 4 * kl + run.par);
  d.SetAttr("kl_max", 10 * kl);
  d.SetAttr("top1_agreement", 1 - 0.5 * run.delta_nll);
}

// Pairs: 100 per file; the drop follows ΔNLL on the first file and the parallel error on the second.
void WritePairs(const store::Group& g, const SweepFixture& f, const FixtureRun* run) {
  const store::Group p = g.CreateGroup("pairs");
  std::vector<std::string> file;
  std::vector<int64_t> n, correct, ties;
  std::vector<double> accuracy, drop;
  int64_t total = 0, total_correct = 0;
  for (size_t k = 0; k < f.pair_files.size(); ++k) {
    const double d = run == nullptr ? 0.0 : (k == 0 ? run->delta_nll : run->par) * 0.5;
    const int64_t c = int64_t(std::lround(100 * (kRefPairsAccuracy - d)));
    file.push_back(f.pair_files[k]);
    n.push_back(100);
    correct.push_back(c);
    ties.push_back(0);
    accuracy.push_back(double(c) / 100);
    drop.push_back(kRefPairsAccuracy - double(c) / 100);
    total += 100;
    total_correct += c;
  }
  const double acc = double(total_correct) / double(total);
  p.SetAttr("accuracy", acc);
  p.SetAttr("pairs", total);
  p.SetAttr("correct", total_correct);
  p.SetAttr("ties", int64_t(0));
  store::Table t;
  t.AddColumn("file", file).AddColumn("pairs", n).AddColumn("correct", correct).AddColumn("ties", ties);
  t.AddColumn("accuracy", accuracy);
  if (run != nullptr) {
    p.SetAttr("ref_accuracy", kRefPairsAccuracy);
    p.SetAttr("accuracy_drop", kRefPairsAccuracy - acc);
    t.AddColumn("accuracy_drop", drop);
  }
  p.WriteTable("files", t);
  store::Table terms;
  terms.AddColumn("linguistics_term", std::vector<std::string>{"subject_verb_agreement"});
  terms.AddColumn("pairs", std::vector<int64_t>{total}).AddColumn("correct", std::vector<int64_t>{total_correct});
  terms.AddColumn("ties", std::vector<int64_t>{0}).AddColumn("accuracy", std::vector<double>{acc});
  p.WriteTable("terms", terms);
  store::Table items;
  items.AddColumn("file", std::vector<std::string>{f.pair_files[0]}).AddColumn("line", std::vector<int64_t>{1});
  items.AddColumn("uid", std::vector<std::string>{"u"}).AddColumn("pair_id", std::vector<std::string>{"0"});
  items.AddColumn("linguistics_term", std::vector<std::string>{"subject_verb_agreement"});
  items.AddColumn("logp_good", std::vector<double>{-10.0}).AddColumn("logp_bad", std::vector<double>{-12.0});
  items.AddColumn("tokens_good", std::vector<int64_t>{5}).AddColumn("tokens_bad", std::vector<int64_t>{5});
  items.AddColumn("correct", std::vector<uint8_t>{1});
  p.WriteTable("items", items);
}

void WriteLmEval(const store::Group& g, const FixtureRun& run) {
  const store::Group e = g.CreateGroup("lm_eval");
  e.SetAttr("source", "lm_eval_" + run.name + ".json");
  e.SetAttr("sha256", Sha256Hex(run.name));
  e.SetAttr("model_args", "pretrained=" + run.name);
  store::Table t;
  t.AddColumn("task", std::vector<std::string>{"blimp_agr", "blimp_agr", "wikitext"});
  t.AddColumn("metric", std::vector<std::string>{"acc", "acc_stderr", "word_perplexity"});
  t.AddColumn("filter", std::vector<std::string>{"none", "none", "none"});
  t.AddColumn("value", std::vector<double>{0.8 - 0.3 * run.delta_nll, 0.01, 20 * std::exp(run.delta_nll)});
  e.WriteTable("scores", t);
}

std::string Compression(const FixtureRun& run) {
  nlohmann::json cal = {{"source", "calib.txt"},
                        {"text_sha256", Sha256Hex("calib")},
                        {"windowing", run.family == "pruning" ? "wanda" : "awq"},
                        {"seed", 0},
                        {"samples", 8},
                        {"seq_len", 64},
                        {"windows_used", run.family == "pruning" ? 8 : 3}};  // AWQ's windowing can yield fewer
  nlohmann::json c = {{"recipe", run.name},
                      {"method", run.method},
                      {"family", run.family},
                      {"calibration", cal},
                      {"perpcomp", "perpcomp 0.1.0"}};
  return c.dump();
}

}  // namespace

SweepFixture DefaultFixture(int n, uint64_t seed) {
  SweepFixture f;
  std::mt19937_64 rng(seed);
  const char* const methods[] = {"rtn", "awq", "magnitude", "wanda"};
  for (int i = 0; i < n; ++i) {
    FixtureRun r;
    r.method = methods[i % 4];
    r.family = (i % 4) < 2 ? "quantization" : "pruning";
    r.name = r.method + "-" + std::to_string(i);
    r.perp = 0.002 * std::exp(3.0 * Uniform(rng));
    r.par = 0.002 * std::exp(4.0 * Uniform(rng));
    r.delta_nll = 4.0 * r.perp * (1 + 0.15 * (Uniform(rng) - 0.5));
    r.rel_fro = 0.02 + 0.1 * Uniform(rng);
    r.lm_eval = i % 5 != 4;  // imported for some runs only
    f.runs.push_back(r);
  }
  return f;
}

std::string FixtureConventions(const SweepFixture& f) {
  nlohmann::json c = {
      {"model", "models/tiny"},
      {"model_hash", Sha256Hex("tiny")},
      {"eval_text", "eval.txt"},
      {"eval_sha256", Sha256Hex("eval")},
      {"seq_len", kSeqLen},
      {"windows", kWindows},
      {"calib",
       {{"source", "calib.txt"}, {"sha256", Sha256Hex("calib")}, {"samples", 8}, {"seq_len", 64}, {"seed", 0}}},
      {"metrics_conventions", 1},
      {"perpcomp", "perpcomp 0.1.0"}};
  if (f.pairs) {
    nlohmann::json pairs = nlohmann::json::array();
    for (const std::string& p : f.pair_files) pairs.push_back({{"file", p}, {"sha256", Sha256Hex(p)}});
    c["pairs"] = pairs;
  }
  return c.dump();
}

void WriteSweepResults(const std::string& path, const SweepFixture& f) {
  const std::string conventions = FixtureConventions(f);
  const std::string key = Sha256Hex(conventions);
  store::StagedWriter out = store::File::CreateStaged(path, store::kind::kSweepResults, true);
  const store::Group root = out.root();
  root.SetAttr("sweep", f.sweep);
  root.SetAttr("sweep_yaml", "name: " + f.sweep + "\n");
  root.SetAttr("conventions", conventions);
  root.SetAttr("conventions_key", key);
  root.SetAttr("runs_total", f.runs_total > 0 ? f.runs_total : int64_t(f.runs.size()));
  root.SetAttr("runs_complete", int64_t(f.runs.size()));
  root.SetAttr("shard", f.shard);
  root.SetAttr("reference_ppl", std::exp(kRefMeanNll));
  root.SetAttr("reference_mean_nll", kRefMeanNll);
  root.SetAttr("reference_pairs_accuracy", f.pairs ? kRefPairsAccuracy : std::nan(""));
  const store::Group runs = root.CreateGroup("runs");
  for (size_t i = 0; i < f.runs.size(); ++i) {
    const FixtureRun& r = f.runs[i];
    const store::Group g = runs.CreateGroup(r.name);
    std::string conv = conventions, conv_key = key;
    if (f.odd_conventions_run && *f.odd_conventions_run == i) {
      nlohmann::json c = nlohmann::json::parse(conventions);
      c["seq_len"] = 2 * kSeqLen;
      conv = c.dump();
      conv_key = Sha256Hex(conv);
    }
    g.SetAttr("run", r.name);
    g.SetAttr("index", int64_t(i));
    g.SetAttr("recipe", r.name);
    g.SetAttr("method", r.method);
    g.SetAttr("family", r.family);
    g.SetAttr("params", nlohmann::json{{"bits", 4}, {"group_size", 16}}.dump());
    g.SetAttr("recipe_yaml", "name: " + r.name + "\nmethod: " + r.method + "\n");
    g.SetAttr("compression", Compression(r));
    g.SetAttr("status", "complete");
    g.SetAttr("conventions", conv);
    g.SetAttr("conventions_key", conv_key);
    g.SetAttr("seconds_compress", 1.5);
    g.SetAttr("seconds_measure", 2.5);
    g.SetAttr("seconds_eval", 0.5);
    // The measure run's own attributes.
    g.SetAttr("text", "eval.txt");
    g.SetAttr("text_sha256", Sha256Hex("eval"));
    g.SetAttr("seq_len", kSeqLen);
    g.SetAttr("windows", kWindows);
    g.SetAttr("tokens", kWindows * (kSeqLen - 1));
    g.SetAttr("metrics_conventions", int64_t(1));
    g.SetAttr("layers", int64_t(f.layers));
    WriteSites(g, f, i);
    if (f.weights) WriteWeights(g, f, r);
    WriteDownstream(g, r);
    if (f.pairs) WritePairs(g, f, &r);
    if (r.lm_eval) WriteLmEval(g, r);
    const store::Group c = g.CreateGroup("compress");
    store::Table linears;
    linears.AddColumn("name", std::vector<std::string>{LinearName(0, "q")});
    linears.AddColumn("rel_error", std::vector<double>{r.rel_fro});
    c.WriteTable("linears", linears);
  }
  const store::Group ref = root.CreateGroup("reference");
  ref.SetAttr("ppl", std::exp(kRefMeanNll));
  ref.SetAttr("mean_nll", kRefMeanNll);
  if (f.pairs) WritePairs(ref, f, nullptr);
  out.Commit();
}

}  // namespace pc::test
