#include "probes/probe_report.h"

#include <cmath>
#include <functional>
#include <map>

#include "core/error.h"
#include "core/strings.h"
#include "reports/format.h"
#include "reports/html.h"
#include "reports/stats.h"
#include "reports/svg.h"

namespace pc::probes {

using reports::TextTable;

namespace {

std::string F(double v) { return reports::FormatSignificant(v, 4); }
std::string Share(double v) { return reports::FormatFixed(v, 4); }
std::string Pm(const MeanStd& m, int digits = 4) {
  if (m.n == 0) return "n/a";
  return reports::FormatSignificant(m.mean, digits) + " ± " + reports::FormatSignificant(m.std, 2);
}
double StatValue(const reports::Stat& s) { return s.value ? *s.value : kNaN; }

std::string RowLabel(const ScaleRow& row) {
  if (row.kind == "baseline") return "baseline (no hooks)";
  if (row.kind == "parallel") return Str("parallel x ", FormatDouble(row.setting.alpha));
  if (row.kind == "perpendicular") return Str("perpendicular x ", FormatDouble(row.setting.beta));
  return Str("exclude-self x ", FormatDouble(row.setting.factor));
}

void Intro(reports::HtmlPage& page, const ProbeContext& c) {
  std::vector<std::string> items = {
      Str("model: ", c.model, " (", c.model_type, ", ", c.norm, ", ", c.layers, " layers)"),
      Str("text: ", c.text, " (sha256 ", c.text_sha256.substr(0, 12), "…), ", c.windows, " windows of ", c.seq_len,
          " tokens")};
  if (!c.pair_files.empty()) items.push_back("minimal pairs: " + Join(c.pair_files, ", "));
  page.List(items);
  page.Pre(c.command);
}

}  // namespace

NormDepthStats CorrelateNormDepth(const NormDepthData& d) {
  NormDepthStats s;
  s.sentences = d.sentences;
  s.unaligned = d.unaligned;
  reports::VariableNames depth{"norm", "depth"}, pos{"norm", "position"};
  for (size_t l = 0; l < d.norm.size(); ++l) {
    NormDepthRow r;
    r.layer = static_cast<int>(l);
    r.words = static_cast<int64_t>(d.depth.size());
    r.pearson = StatValue(reports::Pearson(d.norm[l], d.depth, depth));
    r.spearman = StatValue(reports::Spearman(d.norm[l], d.depth, depth));
    r.pearson_position = StatValue(reports::Pearson(d.norm[l], d.token_position, pos));
    r.spearman_position = StatValue(reports::Spearman(d.norm[l], d.token_position, pos));
    s.rows.push_back(r);
  }
  s.spearman_depth_position = StatValue(reports::Spearman(d.depth, d.token_position, {"depth", "position"}));
  return s;
}

TextTable DecomposeUpdatesTable(const DecomposeResult& r) {
  TextTable t({"layer", "update", "tokens", "skipped", "par share", "perp share", "mean ‖Δ‖/‖h‖", "c mean", "c p05",
               "c p50", "c p95", "cos p50"});
  for (const auto& u : r.updates) {
    Summary c = Summarize(u.split.coef), cs = Summarize(u.split.cos);
    t.AddRow({std::to_string(u.layer), u.sublayer, std::to_string(u.split.tokens), std::to_string(u.split.skipped),
              Share(u.split.parallel_share()), Share(u.split.perpendicular_share()), F(u.split.mean_rel_norm()),
              F(c.mean), F(c.pct[1]), F(c.pct[3]), F(c.pct[5]), F(cs.pct[3])});
  }
  t.AlignNumericColumns();
  return t;
}

TextTable DecomposeValueTable(const DecomposeResult& r) {
  TextTable t({"layer", "heads", "par share (mean over heads)", "min head", "max head", "c mean", "a_ii mean",
               "a_ii p50"});
  std::map<int, std::vector<const HeadDecomposition*>> by_layer;
  for (const auto& h : r.heads) by_layer[h.layer].push_back(&h);
  for (const auto& [layer, heads] : by_layer) {
    double sum = 0, lo = INFINITY, hi = -INFINITY;
    std::vector<float> coef, self;
    for (const auto* h : heads) {
      const double p = h->split.parallel_share();
      sum += p;
      lo = std::min(lo, p);
      hi = std::max(hi, p);
      coef.insert(coef.end(), h->split.coef.begin(), h->split.coef.end());
      self.insert(self.end(), h->self_weight.begin(), h->self_weight.end());
    }
    Summary sw = Summarize(self);
    t.AddRow({std::to_string(layer), std::to_string(heads.size()), Share(sum / heads.size()), Share(lo), Share(hi),
              F(Summarize(coef).mean), F(sw.mean), F(sw.pct[3])});
  }
  t.AlignNumericColumns();
  return t;
}

TextTable ScaleTable(const ScaleResult& r) {
  std::vector<std::string> header = {"setting", "loss", "delta loss", "ppl"};
  const bool pairs = r.baseline.pairs.has_value();
  if (pairs) {
    header.push_back("accuracy");
    for (const auto& f : r.baseline.pairs->by_file) header.push_back("acc " + f.group);
  }
  TextTable t(header);
  for (const auto& row : r.rows) {
    std::vector<std::string> cells = {RowLabel(row), F(row.score.loss), F(row.score.loss - r.baseline.loss),
                                      F(row.score.ppl)};
    if (pairs) {
      cells.push_back(reports::FormatFixed(row.score.accuracy(), 4));
      for (const auto& f : row.score.pairs->by_file) cells.push_back(reports::FormatFixed(f.accuracy, 4));
    }
    t.AddRow(cells);
  }
  t.AlignNumericColumns();
  return t;
}

TextTable PerturbSummaryTable(const PerturbResult& r) {
  TextTable t({"delta", "kind", "seeds", "loss damage (mean ± std)", "accuracy drop (mean ± std)", "perturbed",
               "skipped"});
  for (const auto& s : r.summary) {
    t.AddRow({FormatDouble(s.delta), PerturbKindName(s.kind), std::to_string(s.damage.n), Pm(s.damage),
              r.baseline.pairs ? Pm(s.accuracy_drop) : "n/a", std::to_string(s.tokens), std::to_string(s.skipped)});
  }
  t.AlignNumericColumns();
  return t;
}

TextTable PerturbRatioTable(const PerturbResult& r, const std::vector<double>& deltas) {
  TextTable t({"delta", "magnitude damage", "direction damage", "direction / magnitude", "magnitude acc drop",
               "direction acc drop"});
  for (size_t i = 0; i < deltas.size(); ++i) {
    std::string md = "n/a", dd = "n/a", ma = "n/a", da = "n/a";
    for (const auto& s : r.summary) {
      if (s.delta != deltas[i]) continue;
      std::string& dmg = s.kind == PerturbKind::kMagnitude ? md : dd;
      std::string& acc = s.kind == PerturbKind::kMagnitude ? ma : da;
      dmg = F(s.damage.mean);
      if (r.baseline.pairs) acc = F(s.accuracy_drop.mean);
    }
    t.AddRow({FormatDouble(deltas[i]), md, dd, F(r.loss_ratio[i]), ma, da});
  }
  t.AlignNumericColumns();
  return t;
}

TextTable RepairTable(const PerturbResult& r) {
  TextTable t({"delta", "kind", "repair", "damage", "repaired damage", "recovered (mean ± std)",
               "accuracy recovered (mean ± std)"});
  for (const auto& s : r.repair) {
    t.AddRow({FormatDouble(s.delta), PerturbKindName(s.kind), RepairKindName(s.repair),
              F(s.damage_unrepaired.mean), F(s.damage_repaired.mean), Pm(s.recovered, 3),
              r.baseline.pairs ? Pm(s.accuracy_recovered, 3) : "n/a"});
  }
  t.AlignNumericColumns();
  return t;
}

TextTable HiddenNormsTable(const PerturbResult& r) {
  TextTable t({"layer", "perturbed", "‖h‖ p01", "‖h‖ p05", "‖h‖ p50", "‖h‖ p95", "‖h‖ max"});
  for (const auto& n : r.norms) {
    t.AddRow({std::to_string(n.layer), r.layers.Contains(n.layer) ? "yes" : "", F(n.norm.pct[0]), F(n.norm.pct[1]),
              F(n.norm.pct[3]), F(n.norm.pct[5]), F(n.norm.max)});
  }
  t.AlignNumericColumns();
  return t;
}

TextTable NormDepthTable(const NormDepthStats& s) {
  TextTable t({"layer", "words", "Pearson ‖h‖~depth", "Spearman ‖h‖~depth", "Pearson ‖h‖~position",
               "Spearman ‖h‖~position"});
  for (const auto& r : s.rows) {
    t.AddRow({std::to_string(r.layer), std::to_string(r.words), reports::FormatFixed(r.pearson, 3),
              reports::FormatFixed(r.spearman, 3), reports::FormatFixed(r.pearson_position, 3),
              reports::FormatFixed(r.spearman_position, 3)});
  }
  t.AlignNumericColumns();
  return t;
}

std::string DecomposeHtml(const ProbeContext& c, const DecomposeResult& r) {
  reports::HtmlPage page("perpcomp probe decompose: " + c.model);
  Intro(page, c);
  page.Paragraph(
      "Each update Δ (attention or MLP) is split against the incoming residual state h: Δ∥ = c·h with "
      "c = Δ·h/‖h‖², Δ⊥ = Δ − Δ∥. The parallel share is Σ‖Δ∥‖²/Σ‖Δ‖² over tokens; cos = Δ·h/(‖Δ‖‖h‖). In value "
      "space each head's output o_i = Σ_j a_ij·v_j is split against the token's own value vector v_i. "
      "Definitions: docs/SCIENCE.md.");
  page.Section("Parallel share per layer");
  std::vector<reports::LineSeries> series(2);
  series[0].name = "attention update";
  series[1].name = "MLP update";
  for (const auto& u : r.updates) {
    auto& s = series[u.sublayer == "attn" ? 0 : 1];
    s.x.push_back(u.layer);
    s.y.push_back(u.split.parallel_share());
  }
  if (!r.heads.empty()) {
    reports::LineSeries v;
    v.name = "value (head mean)";
    std::map<int, std::pair<double, int>> acc;
    for (const auto& h : r.heads) {
      acc[h.layer].first += h.split.parallel_share();
      acc[h.layer].second += 1;
    }
    for (const auto& [layer, p] : acc) {
      v.x.push_back(layer);
      v.y.push_back(p.first / p.second);
    }
    series.push_back(v);
  }
  reports::LineChartOptions lo;
  lo.title = "Share of update energy parallel to the reference";
  lo.note = "residual: against the incoming hidden state; value: against the token's own value vector";
  lo.x.title = "layer";
  lo.y.title = "parallel share";
  page.Figure(reports::LineChartSvg(series, lo));
  page.Table(DecomposeUpdatesTable(r), "Residual-space decomposition of the updates");
  if (!r.heads.empty()) {
    page.Section("Value space per head");
    page.Table(DecomposeValueTable(r), "Value-space decomposition, per layer");
    std::map<int, size_t> layer_row;
    int heads = 0;
    for (const auto& h : r.heads) {
      layer_row.emplace(h.layer, layer_row.size());
      heads = std::max(heads, h.head + 1);
    }
    auto heat = [&](const std::string& title, const std::function<double(const HeadDecomposition&)>& value) {
      reports::HeatMapData d;
      for (const auto& [layer, row] : layer_row) d.rows.push_back("layer " + std::to_string(layer));
      for (int h = 0; h < heads; ++h) d.columns.push_back("head " + std::to_string(h));
      d.values.assign(d.rows.size() * d.columns.size(), kNaN);
      for (const auto& h : r.heads) d.values[layer_row[h.layer] * heads + h.head] = value(h);
      reports::HeatMapOptions o;
      o.title = title;
      o.row_title = "layer";
      o.column_title = "head";
      page.Figure(reports::HeatMapSvg(d, o));
    };
    heat("Parallel share of o_i against v_i", [](const auto& h) { return h.split.parallel_share(); });
    heat("Mean parallel coefficient c = o_i·v_i/‖v_i‖²",
         [](const auto& h) { return Summarize(h.split.coef).mean; });
    heat("Mean self weight a_ii", [](const auto& h) { return Summarize(h.self_weight).mean; });
  }
  page.Section("Distributions of the parallel coefficient");
  for (const auto& u : r.updates) {
    reports::HistogramOptions ho;
    ho.title = Str("layer ", u.layer, " ", u.sublayer, " update: c = Δ·h/‖h‖²");
    Summary s = Summarize(u.split.coef);
    ho.note = Str("p01 ", F(s.pct[0]), ", p50 ", F(s.pct[3]), ", p99 ", F(s.pct[6]), "; ", u.split.tokens, " tokens");
    ho.x_title = "c";
    ho.bins = 40;
    ho.markers = {{0.0, "0"}};
    // The central 99% (the tails are in the percentiles): one outlier must not squash the picture.
    std::vector<double> v;
    for (float x : u.split.coef) {
      if (x >= s.pct[0] && x <= s.pct[6]) v.push_back(x);
    }
    page.Figure(reports::HistogramSvg(v, ho));
  }
  return page.Render();
}

std::string ScaleHtml(const ProbeContext& c, const ScaleResult& r, const ScaleOptions& o) {
  reports::HtmlPage page("perpcomp probe scale: " + c.model);
  Intro(page, c);
  page.Paragraph(Str("Space: ", SpaceName(o.space), "; layers ", o.layers.ToString(),
                     o.space == Space::kResidual ? Str("; updates: ", o.attn && o.mlp ? "attention and MLP"
                                                                              : o.attn ? "attention" : "MLP")
                                                         : std::string("; attention outputs before o_proj"),
                     ". Parallel rows scale Δ∥ by α (β = 1), perpendicular rows Δ⊥ by β (α = 1); exclude-self "
                     "keeps a_ii·v_i and scales Σ_{j≠i} a_ij·v_j. Every row runs through the hooks."));
  page.Section("Loss and accuracy per setting");
  page.Table(ScaleTable(r), "Scaling table");
  if (!r.grid.empty()) {
    page.Section("Heat map over α × β");
    auto heat = [&](const std::string& title, bool accuracy) {
      reports::HeatMapData d;
      for (double a : r.grid_alphas) d.rows.push_back("α = " + FormatDouble(a));
      for (double b : r.grid_betas) d.columns.push_back("β = " + FormatDouble(b));
      for (const auto& s : r.grid) {
        double v = accuracy ? s.accuracy() : s.loss - r.baseline.loss;
        d.values.push_back(std::isfinite(v) ? v : kNaN);
      }
      reports::HeatMapOptions ho;
      ho.title = title;
      ho.row_title = "α (parallel)";
      ho.column_title = "β (perpendicular)";
      ho.value_title = accuracy ? "accuracy" : "delta loss (nats)";
      page.Figure(reports::HeatMapSvg(d, ho));
    };
    heat("Loss increase over the baseline", false);
    if (r.baseline.pairs) heat("Minimal-pair accuracy", true);
  }
  return page.Render();
}

std::string PerturbHtml(const ProbeContext& c, const PerturbResult& r, const PerturbOptions& o,
                        const NormDepthStats* depth) {
  reports::HtmlPage page("perpcomp probe perturb: " + c.model);
  Intro(page, c);
  page.Paragraph(Str("Block outputs of layers ", r.layers.ToString(), " perturbed in the same forward by exactly δ per "
                     "token: magnitude h·(1 ± δ/‖h‖), direction a rotation by θ = 2·asin(δ/(2‖h‖)) in a random plane "
                     "containing h. Tokens with ‖h‖ < δ/2 are left unperturbed by both kinds. ",
                     o.seeds, " seeds. Repair restores the attention updates or norm outputs of layers ",
                     r.repair_layers.ToString(), " from the clean run. Baseline loss ", F(r.baseline.loss),
                     r.baseline.pairs ? Str(", accuracy ", reports::FormatFixed(r.baseline.accuracy(), 4)) : ""));
  page.Section("Damage per distance");
  auto chart = [&](const std::string& title, const std::string& y, bool accuracy) {
    std::vector<reports::LineSeries> series;
    for (PerturbKind k : o.kinds) {
      reports::LineSeries s;
      s.name = PerturbKindName(k);
      for (const auto& ps : r.summary) {
        if (ps.kind != k) continue;
        s.x.push_back(ps.delta);
        s.y.push_back(accuracy ? ps.accuracy_drop.mean : ps.damage.mean);
      }
      series.push_back(s);
    }
    reports::LineChartOptions lo;
    lo.title = title;
    lo.x.title = "δ";
    lo.y.title = y;
    page.Figure(reports::LineChartSvg(series, lo));
  };
  chart("LM loss increase (mean over seeds)", "loss increase (nats)", false);
  if (r.baseline.pairs) chart("Minimal-pair accuracy drop (mean over seeds)", "accuracy drop", true);
  page.Table(PerturbSummaryTable(r), "Damage per δ and kind");
  page.Table(PerturbRatioTable(r, o.deltas), "Direction / magnitude");
  if (!r.repair.empty()) {
    page.Section("Repair");
    page.Table(RepairTable(r), "Share of the damage recovered by restoring clean sublayer tensors");
  }
  page.Section("Hidden-state norms (clean)");
  page.Table(HiddenNormsTable(r), "‖h‖ of the block outputs over the text tokens");
  if (depth != nullptr) {
    page.Section("Norm and parse depth");
    page.Paragraph(Str(depth->sentences, " sentences aligned, ", depth->unaligned,
                       " left out; Spearman(depth, token position) = ",
                       reports::FormatFixed(depth->spearman_depth_position, 3)));
    page.Table(NormDepthTable(*depth), "Correlation of ‖h‖ at each word's last token with its parse depth");
    std::vector<reports::LineSeries> series(2);
    series[0].name = "Spearman ‖h‖ ~ depth";
    series[1].name = "Spearman ‖h‖ ~ token position";
    for (const auto& row : depth->rows) {
      series[0].x.push_back(row.layer);
      series[0].y.push_back(row.spearman);
      series[1].x.push_back(row.layer);
      series[1].y.push_back(row.spearman_position);
    }
    reports::LineChartOptions lo;
    lo.title = "‖h‖ against parse depth per layer";
    lo.x.title = "layer";
    lo.y.title = "Spearman ρ";
    page.Figure(reports::LineChartSvg(series, lo));
  }
  return page.Render();
}

}  // namespace pc::probes
