#include "reports/ranking_report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.h"
#include "core/strings.h"
#include "reports/csv.h"
#include "reports/format.h"
#include "reports/html.h"
#include "reports/markdown.h"
#include "reports/rank_tables.h"
#include "reports/svg.h"
#include "reports/table.h"

namespace pc::reports {
namespace {

constexpr size_t kTopPredictors = 20;  // rows of the "strongest predictors" table
constexpr size_t kTopBars = 15;        // bars of its chart
constexpr size_t kMaxProfiles = 60;    // per-layer profile charts (runs in ranking order)

// The page, the Markdown document and the CSV files, written together so they hold the same tables.
class ReportBuilder {
 public:
  explicit ReportBuilder(const std::string& title) : html_(title), md_(title) {}

  void Section(const std::string& heading) {
    html_.Section(heading);
    md_.Heading(heading, 2);
  }
  void Heading(const std::string& text) {
    html_.Heading(text, 3);
    md_.Heading(text, 3);
  }
  void Paragraph(const std::string& text) {
    html_.Paragraph(text);
    md_.Paragraph(EscapeMd(text));
  }
  void List(const std::vector<std::string>& items) {
    html_.List(items);
    md_.List(items);
  }
  // Preformatted in Markdown; in the page one paragraph (lines kept, long lines wrapped).
  void Lines(const std::string& text) {
    html_.Paragraph(text);
    md_.Code(text);
  }
  // A table of the page and the Markdown document, and `<id>.csv`.
  void Table(const std::string& id, const std::string& caption, TextTable table) {
    table.AlignNumericColumns();
    html_.Table(table, caption);
    md_.Paragraph("**" + EscapeMd(caption) + "** (`" + id + ".csv`)");
    md_.Table(table);
    Csv(id + ".csv", table);
    ++tables_;
  }
  void Figure(const std::string& svg, const std::string& caption) {
    html_.Figure(svg, caption);
    ++figures_;
  }
  void Csv(const std::string& name, const TextTable& table) { files_.push_back({name, ToCsv(table)}); }
  void File(const std::string& name, std::string content) { files_.push_back({name, std::move(content)}); }

  RankReport Finish(std::string headline) {
    RankReport r;
    r.files.push_back({"report.html", html_.Render()});
    r.files.push_back({"report.md", md_.Render()});
    for (auto& f : files_) r.files.push_back(std::move(f));
    r.headline = std::move(headline);
    r.html_tables = tables_;
    r.html_figures = figures_;
    return r;
  }

 private:
  static std::string EscapeMd(const std::string& text) { return EscapeMarkdownText(text); }
  static std::string EscapeMarkdownText(const std::string& text) {
    std::string out;
    for (char c : text) {
      if (c == '*' || c == '_' || c == '`' || c == '[' || c == ']' || c == '<' || c == '>' || c == '\\' || c == '#' ||
          c == '|') {
        out += '\\';
      }
      out += c;
    }
    return out;
  }

  HtmlPage html_;
  MarkdownDocument md_;
  std::vector<ReportFile> files_;
  size_t tables_ = 0, figures_ = 0;
};

std::string Num(double v) {
  return FormatSignificant(v, 4);
}

// One row per leaf of a JSON value: "conventions.calib.samples", "conventions.pairs[0].sha256".
void AddFlattened(TextTable* t, const std::string& path, const nlohmann::json& v) {
  if (v.is_object() && !v.empty()) {
    for (const auto& [k, x] : v.items()) AddFlattened(t, path + "." + k, x);
  } else if (v.is_array() && !v.empty()) {
    for (size_t i = 0; i < v.size(); ++i) AddFlattened(t, Str(path, "[", i, "]"), v[i]);
  } else {
    t->AddRow({path, v.is_string() ? v.get<std::string>() : v.dump()});
  }
}

// A primary comparison's label: its perp predictor's name without the quantity ("ratio.block_output.accumulated.mean").
std::string PairLabel(const std::string& perp) { return perp.substr(perp.find('.') + 1); }

// A predictor's name in chart labels (at most 36 characters): block_output -> block, attn_update -> attn,
// mlp_update -> mlp, accumulated -> acc, incoming -> in.
std::string CompactName(const std::string& name) {
  std::string n = ReplaceAll(name, "block_output", "block");
  n = ReplaceAll(n, "attn_update", "attn");
  n = ReplaceAll(n, "mlp_update", "mlp");
  n = ReplaceAll(n, "accumulated", "acc");
  return ReplaceAll(n, ".incoming", ".in");
}

// A predictor's label in narrow tables: without ".block_output.accumulated", or compacted.
std::string ShortName(const PredictorInfo& p) {
  if (p.site == "block_output" && p.kind == "accumulated") return p.quantity + "." + p.form + "." + p.aggregate;
  return CompactName(p.name);
}

std::string DirectionText(Direction d) {
  switch (d) {
    case Direction::kHigherIsWorse:
      return "higher is worse";
    case Direction::kHigherIsBetter:
      return "higher is better";
    case Direction::kSigned:
      return "signed (|ρ|)";
  }
  return "";
}

std::string OrientationText(Orientation o) {
  return o == Orientation::kHigherIsWorse ? "higher is worse" : "higher is better";
}

std::string Verdict(const BootstrapDifference& d) {
  if (!d.estimate.ok()) return d.estimate.reason;
  if (!d.has_interval()) return "no interval";
  if (*d.lo > 0) return "perp better (interval excludes 0)";
  if (*d.hi < 0) return "iso better (interval excludes 0)";
  return "no difference shown (interval includes 0)";
}

// "41.4% / 12.0%": the shares of resamples with d > 0 and d < 0 (ties, d = 0, are common with rank coefficients).
std::string Share(const BootstrapDifference& d) {
  if (d.samples.empty()) return "";
  size_t below = 0;
  for (double v : d.samples) below += v < 0 ? 1 : 0;
  return FormatFixed(100 * d.share_positive.value_or(0), 1) + "% / " +
         FormatFixed(100 * double(below) / double(d.samples.size()), 1) + "%";
}

// "source (sha256 0123456789ab…), windowing, samples × seq_len, seed S" from a compression record.
std::string CalibrationText(const std::string& compression, bool full_sha) {
  const nlohmann::json c = nlohmann::json::parse(compression, nullptr, false);
  if (!c.is_object() || !c.contains("calibration") || !c["calibration"].is_object()) return "";
  const nlohmann::json& cal = c["calibration"];
  auto get = [&](const char* key) -> std::string {
    if (!cal.contains(key)) return "";
    return cal[key].is_string() ? cal[key].get<std::string>() : cal[key].dump();
  };
  std::string out = get("source");
  const std::string sha = get("text_sha256");
  if (!sha.empty()) out += " (sha256 " + (full_sha || sha.size() <= 12 ? sha : sha.substr(0, 12) + "…") + ")";
  std::vector<std::string> parts;
  if (!get("windowing").empty()) parts.push_back(get("windowing"));
  if (!get("samples").empty()) {
    // The windows the method got: AWQ's windowing can yield fewer than the samples requested.
    const std::string used = get("windows_used");
    std::string windows = (used.empty() ? get("samples") : used) + " × " + get("seq_len") + " tokens";
    if (!used.empty() && used != get("samples")) windows += " (" + get("samples") + " requested)";
    parts.push_back(windows);
  }
  if (!get("seed").empty()) parts.push_back("seed " + get("seed"));
  if (!parts.empty()) out += (out.empty() ? "" : ", ") + Join(parts, ", ");
  return out;
}

// Method parameters as "bits=4, group_size=128" (a JSON object), else the text as given.
std::string ParamsText(const std::string& params) {
  const nlohmann::json j = nlohmann::json::parse(params, nullptr, false);
  if (!j.is_object()) return params;
  std::vector<std::string> parts;
  for (const auto& [k, v] : j.items()) parts.push_back(k + "=" + (v.is_string() ? v.get<std::string>() : v.dump()));
  return Join(parts, ", ");
}

bool AllPositive(const std::vector<double>& v) {
  return !v.empty() && std::all_of(v.begin(), v.end(), [](double a) { return std::isfinite(a) && a > 0; });
}

// A log axis for positive values spanning more than two decades.
bool WantsLog(const std::vector<double>& v) {
  if (!AllPositive(v)) return false;
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return *hi / *lo > 100;
}

class Report {
 public:
  Report(const SweepResults& s, const RankingAnalysis& a, const ReportInputs& in)
      : s_(s), a_(a), in_(in), out_(Outcome()), b_("perpcomp rank: " + (s.sweep.empty() ? s.path : s.sweep)) {}

  RankReport Build() {
    const std::string headline = Headline(s_, a_);
    Intro(headline);
    Ranking();
    Correlations();
    EveryOutcome();
    Scatters();
    PerpVersusIso();
    LeaveOneFamilyOut();
    Profiles();
    Runs();
    Conventions();
    DataFiles();
    b_.File("rank_inputs.json", RankInputsJson(RankInputsOf(s_, a_)));
    return b_.Finish(headline);
  }

 private:
  const OutcomeInfo& Outcome() const { return a_.outcomes.outcomes[a_.outcome]; }
  const PredictorInfo& P(size_t i) const { return a_.predictors.predictors[i]; }
  std::string Coef() const { return CoefficientTitle(a_.options.coefficient); }
  std::vector<size_t> RunsWithOutcome() const { return a_.outcomes.RunsWith(a_.outcome); }

  // The main errors aggregated as the mean (iso, par, perp, weight), then the best predictor: the columns of
  // the ranking table, narrow enough for the page (every predictor: ranking_all_predictors.csv).
  std::vector<size_t> RankingColumns() const {
    std::vector<size_t> shown;
    for (size_t m : a_.main) {
      if (P(m).aggregate == "mean" && P(m).quantity != "cos") shown.push_back(m);
    }
    if (a_.best && std::find(shown.begin(), shown.end(), *a_.best) == shown.end()) shown.push_back(*a_.best);
    return shown;
  }

  // The main predictors, then the best one when it is not among them.
  std::vector<size_t> Shown() const {
    std::vector<size_t> shown = a_.main;
    if (a_.best && std::find(shown.begin(), shown.end(), *a_.best) == shown.end()) shown.push_back(*a_.best);
    return shown;
  }

  std::string ScatterSvg(size_t p, const std::string& title) const {
    std::vector<ScatterPoint> points;
    std::vector<double> xs, ys;
    for (size_t r : RunsWithOutcome()) {
      points.push_back(
          {a_.predictors.values[p][r], a_.outcomes.values[a_.outcome][r], s_.runs[r].name, s_.runs[r].family});
      xs.push_back(points.back().x);
      ys.push_back(points.back().y);
    }
    const BootstrapInterval& bi = a_.Cell(a_.outcome, p).at(a_.options.coefficient);
    ScatterOptions o;
    o.title = title;
    o.note = Str(Coef(), " = ", FormatWithInterval(bi), ", n = ", points.size());
    o.x.title = P(p).name;
    o.x.log = WantsLog(xs);
    o.y.title = out_.title;
    o.y.log = WantsLog(ys);
    return ScatterPlotSvg(points, o);
  }

  void Intro(const std::string& headline) {
    b_.Lines(headline);
    b_.Paragraph(
        Str("How to read this: each predictor is one number per run, computed from the run's measured errors "
            "(docs/RANKING.md). The ",
            Coef(), " column says how well it orders the runs the way ", out_.name, " does; brackets are ",
            FormatFixed(100 * a_.options.bootstrap.confidence, 0), "% bootstrap intervals over runs (",
            a_.options.bootstrap.resamples, " resamples, seed ", a_.options.bootstrap.seed,
            "). A correlation over fewer than ", kMinObservations,
            " runs is reported as insufficient, not as a number. ρ(perp) − ρ(iso) > 0 means the "
            "perpendicular error orders the runs more like the damage than the isotropic error does; only an "
            "interval that excludes 0 shows a difference."));
    if (a_.best) {
      b_.Figure(ScatterSvg(*a_.best, "Best predictor: " + P(*a_.best).name),
                Str("The predictor with the strongest ", Coef(), " against ", out_.name, " (by point estimate, among ",
                    a_.predictors.predictors.size(), "), one point per run, with the least-squares line."));
    }
  }

  void Ranking() {
    b_.Section("Ranking of runs by " + out_.name);
    const std::vector<size_t> shown = RankingColumns();
    std::vector<std::string> header = {"rank", "run", "family", out_.name};
    for (size_t p : shown) {
      const bool main = std::find(a_.main.begin(), a_.main.end(), p) != a_.main.end();
      header.push_back(main ? ShortName(P(p)) : "best predictor");
    }
    TextTable t(header);
    const std::vector<double>& y = a_.outcomes.values[a_.outcome];
    std::vector<double> outcome_ranks = OutcomeRanks();
    std::vector<std::vector<double>> ranks;
    for (size_t p : shown) ranks.push_back(PredictorDamageRanks(P(p), a_.predictors.values[p]));
    for (size_t r : a_.order) {
      const SweepRun& run = s_.runs[r];
      std::vector<std::string> row = {RankText(outcome_ranks[r]), run.name, run.family,
                                      a_.outcomes.present[a_.outcome][r] ? Num(y[r]) : "-"};
      for (const auto& rk : ranks) row.push_back(RankText(rk[r]));
      t.AddRow(row);
    }
    b_.Paragraph(
        Str("Runs ordered by ", out_.name, " (", out_.description, "; ", OrientationText(out_.orientation),
            "), least damage first. Beside each run, its rank by iso, par, perp (ratio of sums at the block outputs, "
            "mean over layers), by the weight error and by the best predictor",
            a_.best ? " (" + P(*a_.best).name + ")" : std::string(),
            " (1 = least damage; ties share the mean rank; signed predictors rank by "
            "their distance from no damage). Short names drop \".block_output.accumulated\" or abbreviate (block = "
            "block_output, attn/mlp = the updates, acc = accumulated, in = incoming). Every predictor's rank: "
            "ranking_all_predictors.csv."));
    b_.Table("ranking", "Runs ranked by " + out_.name + ", with their ranks by each predictor", t);
  }

  std::vector<double> OutcomeRanks() const {
    PredictorInfo as_predictor;  // ranks an outcome like a predictor of the same orientation
    as_predictor.direction =
        Outcome().orientation == Orientation::kHigherIsWorse ? Direction::kHigherIsWorse : Direction::kHigherIsBetter;
    std::vector<double> v = a_.outcomes.values[a_.outcome];
    for (size_t r = 0; r < v.size(); ++r) {
      if (!a_.outcomes.present[a_.outcome][r]) v[r] = std::nan("");
    }
    return PredictorDamageRanks(as_predictor, v);
  }

  static std::string RankText(double r) {
    if (std::isnan(r)) return "-";
    return r == std::floor(r) ? FormatFixed(r, 0) : FormatFixed(r, 1);
  }

  TextTable CoefficientTable(const std::vector<size_t>& predictors) const {
    std::vector<std::string> header = {"predictor", "n"};
    for (Coefficient c : kAllCoefficients) header.push_back(CoefficientTitle(c));
    header.push_back("direction");
    TextTable t(header);
    for (size_t p : predictors) {
      const CorrelationCell& cell = a_.Cell(a_.outcome, p);
      std::vector<std::string> row = {P(p).name, std::to_string(cell.n)};
      for (Coefficient c : kAllCoefficients) row.push_back(FormatWithInterval(cell.at(c)));
      row.push_back(DirectionText(P(p).direction));
      t.AddRow(row);
    }
    return t;
  }

  void Correlations() {
    b_.Section("Correlations with " + out_.name);
    b_.Paragraph(
        Str("Each coefficient of ", out_.name, " on the predictor, with its ",
            FormatFixed(100 * a_.options.bootstrap.confidence, 0),
            "% percentile bootstrap interval over runs. Coefficients are on the values as given: an error predictor "
            "that tracks the damage has ρ > 0 against a loss, a cosine has ρ < 0. Every predictor and outcome: "
            "correlations.csv."));
    if (!a_.main.empty()) b_.Table("correlations", "Main predictors against " + out_.name, CoefficientTable(a_.main));

    const std::vector<size_t> order = a_.ByStrength();
    TextTable top({"#", "predictor", Coef(), "strength", "n", "direction"});
    std::vector<Bar> bars;
    for (size_t k = 0; k < order.size() && k < kTopPredictors; ++k) {
      const size_t p = order[k];
      const BootstrapInterval& bi = a_.Cell(a_.outcome, p).at(a_.options.coefficient);
      const auto strength = a_.Strength(a_.outcome, p);
      top.AddRow({std::to_string(k + 1), P(p).name, FormatWithInterval(bi),
                  strength ? FormatFixed(*strength) : bi.estimate.reason, std::to_string(a_.Cell(a_.outcome, p).n),
                  DirectionText(P(p).direction)});
      if (k < kTopBars) {
        Bar bar;
        bar.label = CompactName(P(p).name);
        bar.value = bi.estimate.ok() ? *bi.estimate.value : std::nan("");
        bar.lo = bi.lo;
        bar.hi = bi.hi;
        bar.text = bi.estimate.ok() ? FormatWithInterval(bi) : bi.estimate.reason;
        bars.push_back(bar);
      }
    }
    b_.Paragraph(
        Str("The predictors ordered by strength: ", Coef(),
            " turned so that > 0 means \"orders the runs the way the "
            "damage does\" (signed predictors by |ρ|). The strongest of many candidates is an optimistic estimate "
            "of how well it would do on new runs."));
    b_.Table("top_predictors",
             Str("The ", std::min(order.size(), kTopPredictors), " strongest predictors of ", out_.name), top);
    BarChartOptions bo;
    bo.title = Str(Coef(), " against ", out_.name, ": the ", std::min(order.size(), kTopBars), " strongest predictors");
    bo.note = "whiskers: bootstrap interval";
    bo.value_title = Coef();
    bo.width = 900;
    b_.Figure(BarChartSvg(bars, bo),
              "The strongest predictors with their bootstrap intervals (names shortened: block = "
              "block_output, attn/mlp = the updates, acc = accumulated, in = incoming).");
  }

  void EveryOutcome() {
    b_.Section("Every outcome");
    const auto perp = a_.FindPredictor("perp.ratio.block_output.accumulated.mean");
    const auto iso = a_.FindPredictor("iso.ratio.block_output.accumulated.mean");
    std::vector<std::string> header = {"outcome", "n", "direction"};
    if (perp) header.push_back(Coef() + ": perp.ratio.mean");
    if (iso) header.push_back(Coef() + ": iso.ratio.mean");
    header.push_back("strongest predictor");
    header.push_back(Coef() + ": strongest");
    TextTable t(header);
    for (size_t o = 0; o < a_.outcomes.outcomes.size(); ++o) {
      const OutcomeInfo& info = a_.outcomes.outcomes[o];
      std::vector<std::string> row = {info.name, std::to_string(a_.outcomes.RunsWith(o).size()),
                                      OrientationText(info.orientation)};
      if (perp) row.push_back(FormatWithInterval(a_.Cell(o, *perp).at(a_.options.coefficient)));
      if (iso) row.push_back(FormatWithInterval(a_.Cell(o, *iso).at(a_.options.coefficient)));
      std::optional<size_t> best;
      for (size_t p = 0; p < a_.predictors.predictors.size(); ++p) {
        auto sp = a_.Strength(o, p);
        if (sp && (!best || *sp > *a_.Strength(o, *best))) best = p;
      }
      row.push_back(best ? P(*best).name : "-");
      row.push_back(best ? FormatWithInterval(a_.Cell(o, *best).at(a_.options.coefficient)) : "insufficient or n/a");
      t.AddRow(row);
    }
    b_.Paragraph(
        "Every downstream score against the headline predictors and against its own strongest predictor. "
        "An outcome that some runs lack is correlated over the runs that have it (n).");
    b_.Table("outcomes", Str(Coef(), " for every outcome"), t);
  }

  void Scatters() {
    b_.Section("Scatter plots");
    b_.Paragraph(
        Str("Each main predictor against ", out_.name,
            ": one point per run, coloured by method family, with the "
            "least-squares line (fitted on the displayed axes; an axis is logarithmic when its values are positive "
            "and span more than two decades)."));
    for (size_t p : a_.main) b_.Figure(ScatterSvg(p, P(p).name), P(p).description);
  }

  void PerpVersusIso() {
    if (a_.differences.empty()) return;
    b_.Section("Perpendicular versus isotropic error");
    const std::string o = out_.name;
    b_.Paragraph(
        Str("d = ρ(perp) − ρ(iso), with ρ the ", Coef(), " against ", o,
            " (oriented: > 0 orders runs like the "
            "damage). Paired bootstrap: both coefficients on the same resampled runs; a resample where either is "
            "undefined is dropped. \"d > 0 / d < 0\" are the shares of resamples where perp beats iso and where iso "
            "beats perp (the rest are ties)."));
    if (a_.main_differences > 0) {
      TextTable t(
          {"primary comparison", "ρ(perp)", "ρ(iso)", "d = ρ(perp) − ρ(iso)", "d > 0 / d < 0", "resamples used", "reading"});
      for (size_t k = 0; k < a_.main_differences; ++k) {
        const DifferenceResult& d = a_.differences[k];
        t.AddRow({PairLabel(d.perp), FormatWithInterval(CellOf(d.perp)), FormatWithInterval(CellOf(d.iso)),
                  FormatWithInterval(d.all), Share(d.all), Str(d.all.used, " of ", d.all.resamples), Verdict(d.all)});
      }
      b_.Table("perp_vs_iso", "ρ(perp) − ρ(iso): the primary comparisons, declared before looking", t);
      for (size_t k = 0; k < a_.main_differences; ++k) {
        const DifferenceResult& d = a_.differences[k];
        HistogramOptions h;
        h.title = "Bootstrap distribution of ρ(perp) − ρ(iso): " + PairLabel(d.perp);
        h.note = Str("d = ", FormatWithInterval(d.all), ", ", d.all.used, " resamples");
        h.x_title = "ρ(perp) − ρ(iso)";
        h.markers.push_back({0.0, "0"});
        if (d.all.estimate.ok()) h.markers.push_back({*d.all.estimate.value, "d"});
        b_.Figure(HistogramSvg(d.all.samples, h), Str(d.perp, " versus ", d.iso, "; ", Verdict(d.all), "."));
      }
    }
    TextTable t({"perp predictor", "d = ρ(perp) − ρ(iso)", "d > 0 / d < 0", "reading"});
    for (const DifferenceResult& d : a_.differences) {
      const PredictorInfo* p = FindPredictor(d.perp);
      if (p->form != "ratio" || !(p->aggregate == "mean" || p->aggregate.empty())) continue;
      t.AddRow({d.perp, FormatWithInterval(d.all), Share(d.all), Verdict(d.all)});
    }
    b_.Paragraph(
        "The same at every site (ratio of sums; mean over layers, or the single value of the final norm and the "
        "logits). Every form and aggregate: differences.csv.");
    if (!t.rows().empty()) b_.Table("perp_vs_iso_by_site", "ρ(perp) − ρ(iso) at every site", t);
  }

  const BootstrapInterval& CellOf(const std::string& predictor) const {
    return a_.Cell(a_.outcome, *a_.FindPredictor(predictor)).at(a_.options.coefficient);
  }

  void LeaveOneFamilyOut() {
    b_.Section("Leave one method family out");
    b_.Paragraph(Str(
        "Stability: the same numbers with all runs of one method family left out (families: ", Join(a_.families, ", "),
        "). A result that holds only with one family present is a statement about "
        "that family."));
    if (a_.main_differences > 0) {
      TextTable t({"aggregate", "left out", "runs left", "d = ρ(perp) − ρ(iso)", "d > 0 / d < 0", "reading"});
      for (size_t k = 0; k < a_.main_differences; ++k) {
        const DifferenceResult& d = a_.differences[k];
        const std::string agg = PairLabel(d.perp);
        t.AddRow({agg, "(none)", std::to_string(RunsWithOutcome().size()), FormatWithInterval(d.all), Share(d.all),
                  Verdict(d.all)});
        for (const FamilyLeftOut& f : d.by_family) {
          t.AddRow({agg, f.family, std::to_string(f.remaining), FormatWithInterval(f.difference), Share(f.difference),
                    Verdict(f.difference)});
        }
      }
      b_.Table("perp_vs_iso_by_family", "ρ(perp) − ρ(iso) with each family left out", t);
    }
    if (!a_.main.empty()) {
      std::vector<std::string> header = {"predictor", "all runs"};
      for (const std::string& f : a_.families) header.push_back("without " + f);
      TextTable t(header);
      for (size_t m = 0; m < a_.main.size(); ++m) {
        std::vector<std::string> row = {
            P(a_.main[m]).name, FormatStat(a_.Cell(a_.outcome, a_.main[m]).at(a_.options.coefficient).estimate)};
        for (const GroupLeftOut& g : a_.main_left_out[m])
          row.push_back(Str(FormatStat(g.value), " (n = ", g.remaining, ")"));
        t.AddRow(row);
      }
      b_.Table("leave_one_family_out", Str(Coef(), " of the main predictors with each family left out"), t);
    }
  }

  void Profiles() {
    b_.Section("Per-layer profiles");
    if (!s_.tables.empty()) {
      b_.Paragraph(
          "Not in the tables: the per-layer profiles need the runs' measure tables, which only a results file has.");
      return;
    }
    b_.Paragraph(Str(
        "For each run, the ratio-of-sums errors at the residual stream after each block (accumulated): parallel, "
        "perpendicular and isotropic (iso = par + perp), one point per layer. Runs in ranking order",
        s_.runs.size() > kMaxProfiles ? Str(" (the first ", kMaxProfiles, " of ", s_.runs.size(), ")") : std::string(),
        "."));
    size_t drawn = 0;
    for (size_t r : a_.order) {
      if (drawn++ >= kMaxProfiles) break;
      const SweepRun& run = s_.runs[r];
      std::vector<LineSeries> series;
      bool positive = true;
      for (const char* q : {"par", "perp", "iso"}) {
        const LayerValues lv = SiteLayerValues(run.sites, "block_output", "accumulated", "", std::string("ratio_") + q);
        LineSeries ls;
        ls.name = q;
        for (size_t i = 0; i < lv.layers.size(); ++i) {
          ls.x.push_back(double(lv.layers[i]));
          ls.y.push_back(lv.values[i]);
        }
        positive = positive && AllPositive(ls.y);
        series.push_back(ls);
      }
      LineChartOptions o;
      o.title = run.name + ": errors at the block outputs";
      o.note = Str(run.family, ", ", run.method, "; ", out_.name, " = ",
                   a_.outcomes.present[a_.outcome][r] ? Num(a_.outcomes.values[a_.outcome][r]) : "-");
      o.x.title = "layer";
      o.y.title = "ratio of sums (Σ·/Σ‖y‖²)";
      o.y.log = positive;
      o.width = 640;
      o.height = 340;
      b_.Figure(LineChartSvg(series, o), run.name);
    }
  }

  void Runs() {
    b_.Section("Runs");
    TextTable t(
        {"index", "run", "recipe", "method", "family", "params", "calibration", "seconds (compress / measure / eval)"});
    TextTable full({"index", "run", "recipe", "method", "family", "params", "calibration", "conventions_key",
                    "seconds_compress", "seconds_measure", "seconds_eval", "text", "text_sha256", "seq_len", "windows",
                    "compression"});
    for (const SweepRun& r : s_.runs) {
      t.AddRow({std::to_string(r.index), r.name, r.recipe, r.method, r.family, ParamsText(r.params),
                r.saved ? r.saved->calibration : CalibrationText(r.compression, false),
                r.saved ? r.saved->seconds
                        : Str(Num(r.seconds_compress), " / ", Num(r.seconds_measure), " / ", Num(r.seconds_eval))});
      if (r.saved) continue;  // no full record in the tables
      full.AddRow({std::to_string(r.index), r.name, r.recipe, r.method, r.family, r.params,
                   CalibrationText(r.compression, true), r.conventions_key, FormatDouble(r.seconds_compress),
                   FormatDouble(r.seconds_measure), FormatDouble(r.seconds_eval), r.text, r.text_sha256,
                   std::to_string(r.seq_len), std::to_string(r.windows), r.compression});
    }
    if (!s_.tables.empty()) {
      b_.Paragraph(
          "Every run with its recipe, method parameters, calibration and times as the folders' runs.csv record them "
          "(the full records are not in the tables: no runs_full.csv).");
      b_.Table("runs", "Runs", t);
      return;
    }
    b_.Paragraph(
        "Every run of the results file with its recipe, resolved method parameters and calibration (the full "
        "records, with complete sha256s: runs_full.csv).");
    b_.Table("runs", "Runs", t);
    b_.Csv("runs_full.csv", full);
  }

  // Distinct values of a per-run text, "a (runs 1-3), b (run 4)" style: here just the distinct values.
  template <typename F>
  std::string Distinct(F get) const {
    std::vector<std::string> values;
    for (const SweepRun& r : s_.runs) {
      const std::string v = get(r);
      if (!v.empty() && std::find(values.begin(), values.end(), v) == values.end()) values.push_back(v);
    }
    return values.empty() ? "(not recorded)" : Join(values, "; ");
  }

  void Conventions() {
    b_.Section("Conventions");
    const bool tables = !s_.tables.empty();
    b_.Paragraph(tables ? "Every number on this page was made under these conventions. The runs were read from the "
                          "tables of earlier reports, whose rank_inputs.json files record the conventions; rank checks "
                          "that the folders agree. What the tables do not hold is marked \"not in the tables\"."
                        : "Every number on this page was made under these conventions. The results file records them; "
                          "rank checks that every run carries the file's conventions_key.");
    const std::string absent = "not in the tables";
    auto known = [&](const std::string& v) { return tables && v.empty() ? absent : v; };
    auto number = [&](double v) { return tables && std::isnan(v) ? absent : Num(v); };
    TextTable t({"convention", "value"});
    if (tables) {
      std::vector<std::string> sweeps;
      for (const TablesFolder& f : s_.tables) {
        const std::string status = !f.checked ? "no rank_inputs.json: settings not checked"
                                   : f.unchecked.empty()
                                       ? "rank_inputs.json checked"
                                       : "rank_inputs.json checked; it records runs joined without one from " +
                                             Join(f.unchecked, ", ") + ": their settings not checked";
        t.AddRow({"tables", Str(f.path, ": ", s_.RunsFrom(f), " runs; ", status)});
        for (const std::string& column : f.ignored) t.AddRow({"column ignored", f.path + "/" + column});
        sweeps.insert(sweeps.end(), f.sweeps.begin(), f.sweeps.end());
      }
      t.AddRow({"sweep", sweeps.empty() ? absent : Join(sweeps, ", ")});
      t.AddRow({"runs", Str(s_.runs_in_file, " in the tables")});
    } else {
      t.AddRow({"results file", s_.path});
      t.AddRow({"sweep", s_.sweep.empty() ? "(unnamed)" : s_.sweep});
      t.AddRow({"written by", Str(s_.created_by, " at ", s_.created_at)});
      t.AddRow({"runs", Str(s_.runs_in_file, " in the file; runs_complete ", s_.runs_complete, " of runs_total ",
                            s_.runs_total, s_.shard.empty() ? "" : "; shard " + s_.shard)});
    }
    t.AddRow({"run selection", s_.selection.empty() ? "(all)"
                                                    : Str("--runs '", s_.selection, "': ", s_.runs.size(), " of ",
                                                          s_.runs_in_file, " runs ranked")});
    for (const auto& [run, error] : s_.failed) t.AddRow({"failed run", run + ": " + error});
    t.AddRow({"conventions_key", known(s_.conventions_key)});
    const nlohmann::json conv = nlohmann::json::parse(s_.conventions, nullptr, false);
    if (conv.is_object()) {
      AddFlattened(&t, "conventions", conv);
    } else if (!s_.conventions.empty()) {
      t.AddRow({"conventions", s_.conventions});
    }
    t.AddRow({"reference", Str("ppl ", number(s_.reference_ppl), ", mean NLL ", number(s_.reference_mean_nll),
                               tables && std::isnan(s_.reference_mean_nll) ? "" : " nats/token",
                               ", minimal-pair accuracy ", number(s_.reference_pairs_accuracy))});
    auto measure = [&](auto get) {
      const std::string v = Distinct(get);
      return tables && v == "(not recorded)" ? absent : v;
    };
    t.AddRow({"measured text", measure([](const SweepRun& r) { return r.text; })});
    t.AddRow({"measured text sha256", measure([](const SweepRun& r) { return r.text_sha256; })});
    t.AddRow({"seq_len",
              measure([](const SweepRun& r) { return r.seq_len < 0 ? std::string() : std::to_string(r.seq_len); })});
    t.AddRow({"windows",
              measure([](const SweepRun& r) { return r.windows < 0 ? std::string() : std::to_string(r.windows); })});
    t.AddRow({"calibration records", Distinct([](const SweepRun& r) {
                return r.saved ? r.saved->calibration : CalibrationText(r.compression, true);
              })});
    for (const std::string& note : a_.outcomes.left_out) t.AddRow({"outcome left out", note});
    t.AddRow({"outcome (ranking, headline, plots)", Str(out_.name, ": ", out_.description)});
    t.AddRow({"coefficient (headline, best predictor, differences)", Coef()});
    t.AddRow({"bootstrap",
              Str(a_.options.bootstrap.resamples, " resamples (B) of the runs, seed ", a_.options.bootstrap.seed, ", ",
                  FormatFixed(100 * a_.options.bootstrap.confidence, 0), "% percentile intervals")});
    t.AddRow({"minimum runs for a correlation", std::to_string(kMinObservations)});
    t.AddRow({"predictor selection", a_.options.predictors.empty() ? "(all)" : a_.options.predictors});
    t.AddRow({"predictors", Str(a_.predictors.predictors.size(), " available in every run; ",
                                a_.predictors.left_out.size(), " left out")});
    t.AddRow({"command", in_.command_line});
    t.AddRow({"report made by", in_.version});
    b_.Table("conventions", "Conventions of every number", t);

    b_.Heading("Definitions");
    b_.List({
        "Errors (docs/METRICS.md): at a site, e = ŷ − y; p = e·u with u = y/‖y‖ (incoming frame: u = h/‖h‖, the "
        "incoming "
        "residual, and relative forms divide by ‖Δ‖²); par = p², perp = ‖e − p·u‖², iso = ‖e‖² = par + perp.",
        "Forms: mean = the mean over tokens of the absolute value; mean_rel = the mean of the per-token relative value "
        "(÷‖y‖²; p ÷ ‖y‖); ratio = Σ over tokens ÷ Σ ‖y‖² (p: Σp ÷ Σ‖y‖).",
        "Kinds: accumulated = each model end to end (errors of earlier layers included); local = the compressed layer "
        "on "
        "the reference's input.",
        "Layer aggregates (docs/RANKING.md): mean over layers, the final layer, the worst layer (max for errors, min "
        "for "
        "cosine, the value farthest from no damage for the signed p and norm_ratio). For `linear`, a layer's value is "
        "the "
        "mean over its linears; for weight.rel_fro, the mean of ‖Ŵ−W‖_F/‖W‖_F over the block's linears.",
        "Coefficients (scipy.stats formulas): Pearson r on the values and on their logs (log only when every value of "
        "both is > 0, else n/a), Spearman ρ (average ranks for ties), Kendall τ-b. Fewer than 5 runs: insufficient. A "
        "constant variable or a non-finite value: n/a.",
        "Bootstrap: resample the runs with replacement B times (one mt19937_64 seeded with the seed; "
        "reports/bootstrap.h); "
        "the interval is the percentile interval of the coefficient over the resamples where it is defined. The same "
        "resamples serve every predictor and outcome with the same runs.",
        "Strength: the coefficient turned so that > 0 means the predictor orders the runs the way the damage does "
        "(× −1 for cosine and for outcomes where higher is better); signed predictors by |ρ|.",
        "ρ(perp) − ρ(iso): the difference of strengths of the perp and iso predictors of the same form, site, kind, "
        "frame "
        "and aggregate, on the same resamples; with a family left out, on the remaining runs.",
        "Ranks: 1 = least damage; ties share the mean rank; signed predictors rank by |v − centre|.",
    });

    TextTable od({"outcome", "title", "direction", "runs", "definition"});
    for (size_t o = 0; o < a_.outcomes.outcomes.size(); ++o) {
      const OutcomeInfo& info = a_.outcomes.outcomes[o];
      od.AddRow({info.name, info.title, OrientationText(info.orientation),
                 std::to_string(a_.outcomes.RunsWith(o).size()), info.description});
    }
    b_.Table("outcome_definitions", "Outcomes", od);

    TextTable pd({"predictor", "direction", "definition"});
    for (size_t p : Shown()) pd.AddRow({P(p).name, DirectionText(P(p).direction), P(p).description});
    b_.Table("predictor_definitions", "The predictors shown on this page (all: predictors.csv)", pd);
    if (!a_.predictors.left_out.empty()) {
      std::vector<std::string> notes(
          a_.predictors.left_out.begin(),
          a_.predictors.left_out.begin() + long(std::min<size_t>(a_.predictors.left_out.size(), 20)));
      if (a_.predictors.left_out.size() > 20)
        notes.push_back(Str("… and ", a_.predictors.left_out.size() - 20, " more"));
      b_.Paragraph(
          Str(a_.predictors.left_out.size(), " selected predictors are not available in every run and were left out:"));
      b_.List(notes);
    }
  }

  // The CSV files of the full data (not tables of the page).
  void DataFiles() {
    TextTable corr({"predictor", "outcome", "coefficient", "n", "estimate", "lo", "hi", "reason", "detail", "resamples",
                    "used", "dropped", "confidence", "seed"});
    for (size_t o = 0; o < a_.outcomes.outcomes.size(); ++o) {
      for (size_t p = 0; p < a_.predictors.predictors.size(); ++p) {
        const CorrelationCell& cell = a_.Cell(o, p);
        for (Coefficient c : kAllCoefficients) {
          const BootstrapInterval& bi = cell.at(c);
          corr.AddRow({P(p).name, a_.outcomes.outcomes[o].name, CoefficientKey(c), std::to_string(cell.n),
                       bi.estimate.ok() ? FormatDouble(*bi.estimate.value, 17) : "",
                       bi.lo ? FormatDouble(*bi.lo, 17) : "", bi.hi ? FormatDouble(*bi.hi, 17) : "", bi.estimate.reason,
                       bi.detail, std::to_string(bi.resamples), std::to_string(bi.used), std::to_string(bi.dropped),
                       FormatDouble(bi.confidence), std::to_string(bi.seed)});
        }
      }
    }
    b_.Csv("correlations.csv", corr);

    TextTable diff({"perp", "iso", "left_out_family", "runs", "coefficient", "outcome", "estimate", "lo", "hi",
                    "share_positive", "reason", "detail", "resamples", "used", "seed"});
    TextTable samples({"perp", "iso", "sample", "d"});
    auto add = [&](const DifferenceResult& d, const std::string& family, size_t runs, const BootstrapDifference& x) {
      diff.AddRow({d.perp, d.iso, family, std::to_string(runs), CoefficientKey(a_.options.coefficient), out_.name,
                   x.estimate.ok() ? FormatDouble(*x.estimate.value, 17) : "", x.lo ? FormatDouble(*x.lo, 17) : "",
                   x.hi ? FormatDouble(*x.hi, 17) : "", x.share_positive ? FormatDouble(*x.share_positive, 17) : "",
                   x.estimate.reason, x.detail, std::to_string(x.resamples), std::to_string(x.used),
                   std::to_string(x.seed)});
    };
    for (size_t k = 0; k < a_.differences.size(); ++k) {
      const DifferenceResult& d = a_.differences[k];
      add(d, "", RunsWithOutcome().size(), d.all);
      for (const FamilyLeftOut& f : d.by_family) add(d, f.family, f.remaining, f.difference);
      if (k < a_.main_differences) {
        for (size_t i = 0; i < d.all.samples.size(); ++i) {
          samples.AddRow({d.perp, d.iso, std::to_string(i), FormatDouble(d.all.samples[i], 17)});
        }
      }
    }
    b_.Csv("differences.csv", diff);
    b_.Csv("difference_samples.csv", samples);

    std::vector<std::string> header = {"run", "family", "method"};
    for (const PredictorInfo& p : a_.predictors.predictors) header.push_back(p.name);
    TextTable values(header), ranks(header);
    std::vector<std::vector<double>> all_ranks;
    for (size_t p = 0; p < a_.predictors.predictors.size(); ++p)
      all_ranks.push_back(PredictorDamageRanks(P(p), a_.predictors.values[p]));
    for (size_t r : a_.order) {
      const SweepRun& run = s_.runs[r];
      std::vector<std::string> v = {run.name, run.family, run.method}, k = v;
      for (size_t p = 0; p < a_.predictors.predictors.size(); ++p) {
        v.push_back(FormatDouble(a_.predictors.values[p][r], 17));
        k.push_back(RankText(all_ranks[p][r]));
      }
      values.AddRow(v);
      ranks.AddRow(k);
    }
    b_.Csv("predictor_values.csv", values);
    b_.Csv("ranking_all_predictors.csv", ranks);

    std::vector<std::string> oh = {"run", "family", "method"};
    for (const OutcomeInfo& o : a_.outcomes.outcomes) oh.push_back(o.name);
    TextTable outcomes(oh);
    for (size_t r : a_.order) {
      std::vector<std::string> row = {s_.runs[r].name, s_.runs[r].family, s_.runs[r].method};
      for (size_t o = 0; o < a_.outcomes.outcomes.size(); ++o) {
        row.push_back(a_.outcomes.present[o][r] ? FormatDouble(a_.outcomes.values[o][r], 17) : "");
      }
      outcomes.AddRow(row);
    }
    b_.Csv("outcome_values.csv", outcomes);

    TextTable defs({"predictor", "direction", "quantity", "form", "site", "kind", "frame", "aggregate", "table",
                    "column", "definition"});
    for (const PredictorInfo& p : a_.predictors.predictors) {
      defs.AddRow({p.name, DirectionText(p.direction), p.quantity, p.form, p.site, p.kind, p.frame, p.aggregate,
                   p.table, p.column, p.description});
    }
    b_.Csv("predictors.csv", defs);
  }

  const SweepResults& s_;
  const RankingAnalysis& a_;
  const ReportInputs& in_;
  const OutcomeInfo& out_;
  ReportBuilder b_;
};

}  // namespace

RankReport BuildRankReport(const SweepResults& results, const RankingAnalysis& analysis, const ReportInputs& inputs) {
  return Report(results, analysis, inputs).Build();
}

}  // namespace pc::reports
