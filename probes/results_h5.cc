#include "probes/results_h5.h"

#include "core/error.h"
#include "probes/stats.h"
#include "store/table.h"

namespace pc::probes {

namespace {

std::string PctName(int i) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "p%02d", static_cast<int>(kPercentiles[i]));
  return buf;
}

// <prefix>_mean, <prefix>_p01 ... <prefix>_p99 columns.
void AddSummaryColumns(store::Table& t, const std::string& prefix, const std::vector<Summary>& s) {
  std::vector<double> mean;
  for (const auto& x : s) mean.push_back(x.mean);
  t.AddColumn(prefix + "_mean", mean);
  for (int i = 0; i < kNumPercentiles; ++i) {
    std::vector<double> col;
    for (const auto& x : s) col.push_back(x.pct[i]);
    t.AddColumn(prefix + "_" + PctName(i), col);
  }
}

void AddSplitColumns(store::Table& t, const std::vector<const DirectionalAccum*>& splits) {
  std::vector<int64_t> tokens, skipped;
  std::vector<double> par, perp, rel;
  std::vector<Summary> coef, cos;
  for (const auto* s : splits) {
    tokens.push_back(s->tokens);
    skipped.push_back(s->skipped);
    par.push_back(s->parallel_share());
    perp.push_back(s->perpendicular_share());
    rel.push_back(s->mean_rel_norm());
    coef.push_back(Summarize(s->coef));
    cos.push_back(Summarize(s->cos));
  }
  t.AddColumn("tokens", tokens);
  t.AddColumn("skipped_tokens", skipped);
  t.AddColumn("parallel_share", par);
  t.AddColumn("perpendicular_share", perp);
  t.AddColumn("mean_rel_norm", rel);
  AddSummaryColumns(t, "coef", coef);
  AddSummaryColumns(t, "cos", cos);
}

// <name>_counts (rows, bins) int64, <name>_edges (rows, bins + 1) float64, <name>_outside (rows, 2) int64.
void WriteHistograms(const store::Group& g, const std::string& name, const std::vector<const std::vector<float>*>& rows,
                     int bins) {
  if (rows.empty()) return;
  std::vector<int64_t> counts, outside;
  std::vector<double> edges;
  for (const auto* values : rows) {
    Histogram h = MakeCentralHistogram(*values, bins);
    counts.insert(counts.end(), h.counts.begin(), h.counts.end());
    edges.insert(edges.end(), h.edges.begin(), h.edges.end());
    outside.push_back(h.below);
    outside.push_back(h.above);
  }
  const int64_t n = static_cast<int64_t>(rows.size());
  g.WriteArray(name + "_counts", counts, {n, bins});
  g.WriteArray(name + "_edges", edges, {n, bins + 1});
  g.WriteArray(name + "_outside", outside, {n, 2});
}

}  // namespace

void WriteScoreAttrs(const store::Group& g, const ProbeScore& s) {
  g.SetAttr("loss", s.loss);
  g.SetAttr("ppl", s.ppl);
  g.SetAttr("tokens", s.tokens);
  if (s.pairs) {
    g.SetAttr("accuracy", s.pairs->overall.accuracy);
    g.SetAttr("pairs", s.pairs->overall.pairs);
    g.SetAttr("correct", s.pairs->overall.correct);
    g.SetAttr("ties", s.pairs->overall.ties);
  }
}

void WriteDecompose(const store::Group& g, const DecomposeResult& r, int bins) {
  g.SetAttr("layers", r.layers.ToString());
  g.SetAttr("tokens", r.tokens);
  {
    store::Table t;
    std::vector<int64_t> layer;
    std::vector<std::string> sub;
    std::vector<const DirectionalAccum*> splits;
    for (const auto& u : r.updates) {
      layer.push_back(u.layer);
      sub.push_back(u.sublayer);
      splits.push_back(&u.split);
    }
    t.AddColumn("layer", layer);
    t.AddColumn("sublayer", sub);
    AddSplitColumns(t, splits);
    g.WriteTable("updates", t);
  }
  store::Group hist = g.CreateGroup("histograms");
  hist.SetAttr("bins", static_cast<int64_t>(bins));
  std::vector<const std::vector<float>*> coef, cos;
  for (const auto& u : r.updates) {
    coef.push_back(&u.split.coef);
    cos.push_back(&u.split.cos);
  }
  WriteHistograms(hist, "updates_coef", coef, bins);
  WriteHistograms(hist, "updates_cos", cos, bins);
  if (r.heads.empty()) return;
  store::Table t;
  std::vector<int64_t> layer, head;
  std::vector<const DirectionalAccum*> splits;
  std::vector<Summary> self;
  std::vector<const std::vector<float>*> vcoef, vcos, vself;
  for (const auto& h : r.heads) {
    layer.push_back(h.layer);
    head.push_back(h.head);
    splits.push_back(&h.split);
    self.push_back(Summarize(h.self_weight));
    vcoef.push_back(&h.split.coef);
    vcos.push_back(&h.split.cos);
    vself.push_back(&h.self_weight);
  }
  t.AddColumn("layer", layer);
  t.AddColumn("head", head);
  AddSplitColumns(t, splits);
  AddSummaryColumns(t, "self_weight", self);
  g.WriteTable("value_heads", t);
  WriteHistograms(hist, "value_coef", vcoef, bins);
  WriteHistograms(hist, "value_cos", vcos, bins);
  WriteHistograms(hist, "value_self_weight", vself, bins);
}

void WriteScale(const store::Group& g, const ScaleResult& r, const ScaleOptions& o) {
  g.SetAttr("space", SpaceName(o.space));
  g.SetAttr("layers", o.layers.ToString());
  g.SetAttr("sublayers", o.space == Space::kValue ? std::string("attn")
                                                  : std::string(o.attn && o.mlp ? "attn,mlp" : o.attn ? "attn" : "mlp"));
  WriteScoreAttrs(g.CreateGroup("baseline"), r.baseline);
  store::Table t;
  std::vector<std::string> kind, space;
  std::vector<double> alpha, beta, factor, loss, dloss, ppl, acc, drop;
  for (const auto& row : r.rows) {
    kind.push_back(row.kind);
    space.push_back(row.kind == "baseline" ? "" : SpaceName(row.setting.space));
    alpha.push_back(row.setting.alpha);
    beta.push_back(row.setting.beta);
    factor.push_back(row.setting.factor);
    loss.push_back(row.score.loss);
    dloss.push_back(row.score.loss - r.baseline.loss);
    ppl.push_back(row.score.ppl);
    acc.push_back(row.score.accuracy());
    drop.push_back(r.baseline.accuracy() - row.score.accuracy());
  }
  t.AddColumn("kind", kind);
  t.AddColumn("space", space);
  t.AddColumn("alpha", alpha);
  t.AddColumn("beta", beta);
  t.AddColumn("factor", factor);
  t.AddColumn("loss", loss);
  t.AddColumn("delta_loss", dloss);
  t.AddColumn("ppl", ppl);
  t.AddColumn("accuracy", acc);
  t.AddColumn("accuracy_drop", drop);
  if (r.baseline.pairs) {
    for (size_t f = 0; f < r.baseline.pairs->by_file.size(); ++f) {
      std::vector<double> col;
      for (const auto& row : r.rows) col.push_back(row.score.pairs->by_file[f].accuracy);
      t.AddColumn("accuracy_" + r.baseline.pairs->by_file[f].group, col);
    }
  }
  g.WriteTable("rows", t);
  if (r.grid.empty()) return;
  store::Group grid = g.CreateGroup("grid");
  grid.SetAttr("alphas", r.grid_alphas);
  grid.SetAttr("betas", r.grid_betas);
  std::vector<double> gl, ga;
  for (const auto& s : r.grid) {
    gl.push_back(s.loss);
    ga.push_back(s.accuracy());
  }
  const store::Shape shape = {static_cast<int64_t>(r.grid_alphas.size()), static_cast<int64_t>(r.grid_betas.size())};
  grid.WriteArray("loss", gl, shape);
  grid.WriteArray("accuracy", ga, shape);
}

void WritePerturb(const store::Group& g, const PerturbResult& r, const PerturbOptions& o) {
  g.SetAttr("layers", r.layers.ToString());
  g.SetAttr("repair_layers", r.repair_layers.ToString());
  g.SetAttr("deltas", o.deltas);
  g.SetAttr("seeds", static_cast<int64_t>(o.seeds));
  g.SetAttr("seed", static_cast<int64_t>(o.seed));
  WriteScoreAttrs(g.CreateGroup("baseline"), r.baseline);
  if (!r.norms.empty()) {
    store::Table t;
    std::vector<int64_t> layer, n;
    std::vector<double> mn, mx;
    std::vector<Summary> s;
    for (const auto& x : r.norms) {
      layer.push_back(x.layer);
      n.push_back(x.norm.n);
      mn.push_back(x.norm.min);
      mx.push_back(x.norm.max);
      s.push_back(x.norm);
    }
    t.AddColumn("layer", layer);
    t.AddColumn("tokens", n);
    t.AddColumn("norm_min", mn);
    t.AddColumn("norm_max", mx);
    AddSummaryColumns(t, "norm", s);
    g.WriteTable("hidden_norms", t);
  }
  {
    store::Table t;
    const auto& runs = r.runs;
    t.AddColumnOf("delta", runs, [](const PerturbRun& x) { return x.delta; });
    t.AddColumnOf("kind", runs, [](const PerturbRun& x) { return std::string(PerturbKindName(x.kind)); });
    t.AddColumnOf("seed", runs, [](const PerturbRun& x) { return static_cast<int64_t>(x.seed); });
    t.AddColumnOf("repair", runs, [](const PerturbRun& x) { return std::string(RepairKindName(x.repair)); });
    t.AddColumnOf("loss", runs, [](const PerturbRun& x) { return x.score.loss; });
    t.AddColumnOf("ppl", runs, [](const PerturbRun& x) { return x.score.ppl; });
    t.AddColumnOf("damage", runs, [](const PerturbRun& x) { return x.damage; });
    t.AddColumnOf("accuracy", runs, [](const PerturbRun& x) { return x.score.accuracy(); });
    t.AddColumnOf("accuracy_drop", runs, [](const PerturbRun& x) { return x.accuracy_drop; });
    t.AddColumnOf("perturbed_tokens", runs, [](const PerturbRun& x) { return static_cast<int64_t>(x.displacement.tokens); });
    t.AddColumnOf("skipped_tokens", runs, [](const PerturbRun& x) { return static_cast<int64_t>(x.displacement.skipped); });
    t.AddColumnOf("skipped_reversing_tokens", runs,
                  [](const PerturbRun& x) { return static_cast<int64_t>(x.displacement.skipped_reversing); });
    t.AddColumnOf("max_rel_displacement_error", runs, [](const PerturbRun& x) { return x.displacement.max_rel_error; });
    t.AddColumnOf("max_norm_rel_change", runs, [](const PerturbRun& x) { return x.displacement.max_norm_rel_change; });
    g.WriteTable("runs", t);
  }
  {
    store::Table t;
    const auto& sum = r.summary;
    t.AddColumnOf("delta", sum, [](const PerturbSummary& x) { return x.delta; });
    t.AddColumnOf("kind", sum, [](const PerturbSummary& x) { return std::string(PerturbKindName(x.kind)); });
    t.AddColumnOf("seeds", sum, [](const PerturbSummary& x) { return static_cast<int64_t>(x.damage.n); });
    t.AddColumnOf("damage_mean", sum, [](const PerturbSummary& x) { return x.damage.mean; });
    t.AddColumnOf("damage_std", sum, [](const PerturbSummary& x) { return x.damage.std; });
    t.AddColumnOf("accuracy_drop_mean", sum, [](const PerturbSummary& x) { return x.accuracy_drop.mean; });
    t.AddColumnOf("accuracy_drop_std", sum, [](const PerturbSummary& x) { return x.accuracy_drop.std; });
    t.AddColumnOf("perturbed_tokens", sum, [](const PerturbSummary& x) { return static_cast<int64_t>(x.tokens); });
    t.AddColumnOf("skipped_tokens", sum, [](const PerturbSummary& x) { return static_cast<int64_t>(x.skipped); });
    t.AddColumnOf("skipped_reversing_tokens", sum,
                  [](const PerturbSummary& x) { return static_cast<int64_t>(x.skipped_reversing); });
    g.WriteTable("summary", t);
  }
  {  // skipped token states per run and perturbed layer
    struct Row {
      const PerturbRun* run;
      int layer;
      int64_t skipped, reversing;
    };
    std::vector<Row> rows;
    for (const PerturbRun& x : r.runs) {
      for (const auto& [layer, n] : x.displacement.skipped_by_layer) rows.push_back({&x, layer, n.first, n.second});
    }
    store::Table t;
    t.AddColumnOf("delta", rows, [](const Row& x) { return x.run->delta; });
    t.AddColumnOf("kind", rows, [](const Row& x) { return std::string(PerturbKindName(x.run->kind)); });
    t.AddColumnOf("seed", rows, [](const Row& x) { return static_cast<int64_t>(x.run->seed); });
    t.AddColumnOf("repair", rows, [](const Row& x) { return std::string(RepairKindName(x.run->repair)); });
    t.AddColumnOf("layer", rows, [](const Row& x) { return static_cast<int64_t>(x.layer); });
    t.AddColumnOf("skipped_tokens", rows, [](const Row& x) { return x.skipped; });
    t.AddColumnOf("skipped_reversing_tokens", rows, [](const Row& x) { return x.reversing; });
    g.WriteTable("skipped_by_layer", t);
  }
  {
    store::Table t;
    t.AddColumn("delta", o.deltas);
    t.AddColumn("loss_ratio", r.loss_ratio);
    g.WriteTable("ratio", t);
  }
  if (r.repair.empty()) return;
  store::Table t;
  const auto& rep = r.repair;
  t.AddColumnOf("delta", rep, [](const RepairSummary& x) { return x.delta; });
  t.AddColumnOf("kind", rep, [](const RepairSummary& x) { return std::string(PerturbKindName(x.kind)); });
  t.AddColumnOf("repair", rep, [](const RepairSummary& x) { return std::string(RepairKindName(x.repair)); });
  t.AddColumnOf("damage_unrepaired_mean", rep, [](const RepairSummary& x) { return x.damage_unrepaired.mean; });
  t.AddColumnOf("damage_repaired_mean", rep, [](const RepairSummary& x) { return x.damage_repaired.mean; });
  t.AddColumnOf("damage_repaired_std", rep, [](const RepairSummary& x) { return x.damage_repaired.std; });
  t.AddColumnOf("recovered_mean", rep, [](const RepairSummary& x) { return x.recovered.mean; });
  t.AddColumnOf("recovered_std", rep, [](const RepairSummary& x) { return x.recovered.std; });
  t.AddColumnOf("recovered_seeds", rep, [](const RepairSummary& x) { return static_cast<int64_t>(x.recovered.n); });
  t.AddColumnOf("accuracy_recovered_mean", rep, [](const RepairSummary& x) { return x.accuracy_recovered.mean; });
  t.AddColumnOf("accuracy_recovered_std", rep, [](const RepairSummary& x) { return x.accuracy_recovered.std; });
  t.AddColumnOf("accuracy_recovered_seeds", rep,
                [](const RepairSummary& x) { return static_cast<int64_t>(x.accuracy_recovered.n); });
  g.WriteTable("repair", t);
}

void WriteNormDepth(const store::Group& g, const NormDepthData& d) {
  g.SetAttr("sentences", d.sentences);
  g.SetAttr("unaligned", d.unaligned);
  g.SetAttr("words", static_cast<int64_t>(d.depth.size()));
  g.WriteVector("depth", d.depth);
  g.WriteVector("word_index", d.word_index);
  g.WriteVector("token_position", d.token_position);
  std::vector<double> norm;
  for (const auto& layer : d.norm) norm.insert(norm.end(), layer.begin(), layer.end());
  g.WriteArray("norm", norm, {static_cast<int64_t>(d.norm.size()), static_cast<int64_t>(d.depth.size())},
               store::WriteOptions::Compressed());
}

}  // namespace pc::probes
