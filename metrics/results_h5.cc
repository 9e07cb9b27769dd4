#include "metrics/results_h5.h"

#include "core/error.h"
#include "metrics/site_columns.h"
#include "store/table.h"

namespace pc {
namespace {

template <typename T>
std::vector<T> TensorValues(const at::Tensor& t, at::ScalarType type) {
  at::Tensor c = t.to(type).contiguous();
  return std::vector<T>(c.data_ptr<T>(), c.data_ptr<T>() + c.numel());
}

}  // namespace

void SetAttrs(const store::Group& group, const nlohmann::json& attrs) {
  for (const auto& [key, v] : attrs.items()) {
    if (v.is_string()) {
      group.SetAttr(key, v.get<std::string>());
    } else if (v.is_boolean()) {
      group.SetAttr(key, v.get<bool>());
    } else if (v.is_number_integer()) {
      group.SetAttr(key, v.get<int64_t>());
    } else if (v.is_number()) {
      group.SetAttr(key, v.get<double>());
    } else if (!v.is_null()) {
      group.SetAttr(key, v.dump());
    }
  }
}

void WriteDownstream(const store::Group& g, const DownstreamSummary& d) {
  g.SetAttr("tokens", d.tokens);
  g.SetAttr("ref_mean_nll", d.ref_mean_nll);
  g.SetAttr("mean_nll", d.mean_nll);
  g.SetAttr("delta_nll", d.delta_nll);
  g.SetAttr("delta_nll_se", d.delta_nll_se);  // NaN with one window
  g.SetAttr("kl_mean_se", d.kl_mean_se);
  g.SetAttr("ref_ppl", d.ref_ppl);
  g.SetAttr("ppl", d.ppl);
  g.SetAttr("kl_mean", d.kl_mean);
  g.SetAttr("kl_p50", d.kl_p50);
  g.SetAttr("kl_p90", d.kl_p90);
  g.SetAttr("kl_p99", d.kl_p99);
  g.SetAttr("kl_max", d.kl_max);
  g.SetAttr("top1_agreement", d.top1_agreement);
  g.SetAttr("ppl_ratio", d.ppl_ratio);
  // Every attribute is one float64 (reports/ reads each as an outcome). Only the compact kld base
  // gives bounds instead of the exact KL, and it never writes this group.
  PC_ASSERT(d.kl_exact, "a downstream group from a compact reference");
  g.SetAttr("dp_mean", d.dp_mean);
  g.SetAttr("dp_rms", d.dp_rms);
  g.SetAttr("dp_min", d.dp_min);
  g.SetAttr("dp_max", d.dp_max);
  const std::pair<const char*, double> dp[] = {{"dp_p1", d.dp_p1},   {"dp_p5", d.dp_p5},   {"dp_p10", d.dp_p10},
                                               {"dp_p25", d.dp_p25}, {"dp_p50", d.dp_p50}, {"dp_p75", d.dp_p75},
                                               {"dp_p90", d.dp_p90}, {"dp_p95", d.dp_p95}, {"dp_p99", d.dp_p99}};
  for (const auto& [name, value] : dp) g.SetAttr(name, value);
}

void WriteMeasureRun(const store::Group& run, const MeasureResult& r, const at::Tensor& windows) {
  run.SetAttr("metrics_conventions", kMetricsConventionsVersion);
  run.SetAttr("windows", r.windows);
  run.SetAttr("seq_len", r.seq_len);
  run.SetAttr("batch", r.batch);
  run.SetAttr("per_token", r.per_token_kept);
  run.SetAttr("cache_entry", r.cache_entry);
  run.SetAttr("cache_hit", r.cache_hit);
  run.SetAttr("seconds", r.seconds);

  // sites: one row per (site, kind, frame).
  const size_t n = r.sites.size();
  std::vector<std::string> name(n), site(n), role(n), kind(n), frame(n);
  std::vector<int64_t> layer(n), dim(n), tokens(n), skipped(n);
  std::vector<std::vector<double>> cols(kNumSiteValueColumns, std::vector<double>(n));
  std::vector<int64_t> last_tokens(n);
  std::vector<std::vector<double>> pct(kNumRelQuantities * 3, std::vector<double>(n));
  for (size_t i = 0; i < n; ++i) {
    const SiteEntry& e = r.sites[i];
    const SiteAggregate& a = r.aggregates[i];
    name[i] = e.name;
    site[i] = SiteTypeName(e.type);
    role[i] = e.type == SiteType::kLinear ? RoleName(e.role) : "";
    kind[i] = ErrorKindName(e.kind);
    frame[i] = FrameName(e.frame);
    layer[i] = e.layer;
    dim[i] = e.dim;
    tokens[i] = a.tokens;
    skipped[i] = a.skipped_tokens;
    int k = 0;
#define PC_SITE_VALUE(member, form, quantity) cols[k++][i] = a.member;
    PC_SITE_VALUE_COLUMNS(PC_SITE_VALUE)
#undef PC_SITE_VALUE
    last_tokens[i] = a.last_tokens;
    for (int q = 0; q < kNumRelQuantities; ++q) {
      for (int l = 0; l < 3; ++l) pct[q * 3 + l][i] = a.percentile[q][l];
    }
  }
  store::Table sites(run.Where() + "/sites");
  sites.AddColumn("name", name).AddColumn("site", site).AddColumn("layer", layer).AddColumn("role", role);
  sites.AddColumn("kind", kind).AddColumn("frame", frame).AddColumn("dim", dim);
  sites.AddColumn("tokens", tokens).AddColumn("skipped_tokens", skipped).AddColumn("last_tokens", last_tokens);
  for (int k = 0; k < kNumSiteValueColumns; ++k) sites.AddColumn(kSiteValueColumns[k].name, cols[k]);
  for (int q = 0; q < kNumRelQuantities; ++q) {
    for (int l = 0; l < 3; ++l) sites.AddColumn(SitePercentileColumn(q, l), pct[q * 3 + l]);
  }
  run.WriteTable("sites", sites);

  // weights: one row per linear.
  const size_t m = r.weights.size();
  std::vector<std::string> wname(m), wrole(m);
  std::vector<int64_t> wlayer(m), numel(m);
  std::vector<std::vector<double>> wcols(kNumWeightValueColumns, std::vector<double>(m));
  for (size_t i = 0; i < m; ++i) {
    const WeightError& w = r.weights[i];
    wname[i] = w.name;
    wrole[i] = w.role;
    wlayer[i] = w.layer;
    numel[i] = w.numel;
    int k = 0;
#define PC_WEIGHT_VALUE(member) wcols[k++][i] = w.member;
    PC_WEIGHT_VALUE_COLUMNS(PC_WEIGHT_VALUE)
#undef PC_WEIGHT_VALUE
  }
  store::Table weights(run.Where() + "/weights");
  weights.AddColumn("name", wname).AddColumn("layer", wlayer).AddColumn("role", wrole).AddColumn("numel", numel);
  for (int k = 0; k < kNumWeightValueColumns; ++k) weights.AddColumn(kWeightValueColumns[k], wcols[k]);
  run.WriteTable("weights", weights);

  WriteDownstream(run.CreateGroup("downstream"), r.downstream);

  if (r.per_token_kept) {
    const PerTokenValues& pt = r.per_token;
    store::Group g = run.CreateGroup("per_token");
    const store::Shape shape = {pt.entries, pt.windows, pt.seq_len};
    const store::Shape pred = {pt.windows, pt.seq_len - 1};
    const store::WriteOptions z = store::WriteOptions::Compressed();
    g.WriteArray("iso", pt.iso, shape, z);
    g.WriteArray("par", pt.par, shape, z);
    g.WriteArray("perp", pt.perp, shape, z);
    g.WriteArray("p", pt.p, shape, z);
    g.WriteArray("ref_sq", pt.ref_sq, shape, z);
    g.WriteArray("cos", pt.cos, shape, z);
    g.WriteArray("norm_ratio", pt.norm_ratio, shape, z);
    g.WriteArray("valid", pt.valid, shape, z);
    g.WriteArray("tokens", TensorValues<int64_t>(windows, at::kLong), {pt.windows, pt.seq_len}, z);
    g.WriteArray("nll_ref", pt.nll_ref, pred, z);
    g.WriteArray("nll", pt.nll, pred, z);
    g.WriteArray("kl", pt.kl, pred, z);
    g.WriteArray("top1", pt.top1, pred, z);
  }
}

void WritePairs(const store::Group& g, const std::vector<MinimalPair>& pairs, const std::vector<PairScore>& scores,
                const PairAccuracy& acc) {
  PC_ASSERT(pairs.size() == scores.size(), "pairs and scores differ in count");
  g.SetAttr("accuracy", acc.overall.accuracy);
  g.SetAttr("pairs", acc.overall.pairs);
  g.SetAttr("correct", acc.overall.correct);
  g.SetAttr("ties", acc.overall.ties);
  auto rows = [&](const std::string& name, const std::string& key, const std::vector<AccuracyRow>& rs) {
    std::vector<std::string> group;
    std::vector<int64_t> n, correct, ties;
    std::vector<double> accuracy;
    for (const auto& r : rs) {
      group.push_back(r.group);
      n.push_back(r.pairs);
      correct.push_back(r.correct);
      ties.push_back(r.ties);
      accuracy.push_back(r.accuracy);
    }
    store::Table t(g.Where() + "/" + name);
    t.AddColumn(key, group).AddColumn("pairs", n).AddColumn("correct", correct).AddColumn("ties", ties);
    t.AddColumn("accuracy", accuracy);
    g.WriteTable(name, t);
  };
  rows("files", "file", acc.by_file);
  rows("terms", "linguistics_term", acc.by_term);
  std::vector<std::string> file, uid, pair_id, term;
  std::vector<int64_t> line, tokens_good, tokens_bad;
  std::vector<double> good, bad;
  std::vector<uint8_t> correct;
  for (size_t i = 0; i < pairs.size(); ++i) {
    file.push_back(pairs[i].file);
    uid.push_back(pairs[i].uid);
    pair_id.push_back(pairs[i].pair_id);
    term.push_back(pairs[i].term);
    line.push_back(pairs[i].line);
    good.push_back(scores[i].logp_good);
    bad.push_back(scores[i].logp_bad);
    tokens_good.push_back(scores[i].tokens_good);
    tokens_bad.push_back(scores[i].tokens_bad);
    correct.push_back(scores[i].correct() ? 1 : 0);
  }
  store::Table items(g.Where() + "/items");
  items.AddColumn("file", file).AddColumn("line", line).AddColumn("uid", uid).AddColumn("pair_id", pair_id);
  items.AddColumn("linguistics_term", term).AddColumn("logp_good", good).AddColumn("logp_bad", bad);
  items.AddColumn("tokens_good", tokens_good).AddColumn("tokens_bad", tokens_bad).AddColumn("correct", correct);
  g.WriteTable("items", items, store::WriteOptions::Compressed());
}

void WriteLmEval(const store::Group& g, const LmEvalResults& r) {
  g.SetAttr("source", r.path);
  g.SetAttr("sha256", r.sha256);
  g.SetAttr("model_args", r.model_args);
  std::vector<std::string> task, metric, filter;
  std::vector<double> value;
  for (const auto& s : r.scores) {
    task.push_back(s.task);
    metric.push_back(s.metric);
    filter.push_back(s.filter);
    value.push_back(s.value);
  }
  store::Table t(g.Where() + "/scores");
  t.AddColumn("task", task).AddColumn("metric", metric).AddColumn("filter", filter).AddColumn("value", value);
  g.WriteTable("scores", t);
}

}  // namespace pc
