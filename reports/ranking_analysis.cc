#include "reports/ranking_analysis.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>

#include "core/error.h"
#include "core/strings.h"
#include "reports/bootstrap_grid.h"
#include "reports/format.h"
#include "reports/parallel.h"

namespace pc::reports {
namespace {

template <typename T>
std::vector<T> Subset(const std::vector<T>& v, const std::vector<size_t>& runs) {
  std::vector<T> out;
  out.reserve(runs.size());
  for (size_t r : runs) out.push_back(v[r]);
  return out;
}

size_t CoefficientIndex(Coefficient c) {
  for (size_t k = 0; k < kAllCoefficients.size(); ++k) {
    if (kAllCoefficients[k] == c) return k;
  }
  PC_ASSERT(false, "unknown coefficient");
  return 0;
}

// Fills analysis.cells: the outcomes grouped by the runs that have them, one bootstrap grid per group.
void Correlate(RankingAnalysis& a) {
  const size_t outcomes = a.outcomes.outcomes.size(), predictors = a.predictors.predictors.size();
  a.cells.assign(outcomes, std::vector<CorrelationCell>(predictors));
  std::map<std::vector<uint8_t>, std::vector<size_t>> groups;  // presence mask -> outcomes
  for (size_t o = 0; o < outcomes; ++o) groups[a.outcomes.present[o]].push_back(o);
  std::vector<std::string> x_names;
  for (const PredictorInfo& p : a.predictors.predictors) x_names.push_back(p.name);
  for (const auto& [mask, members] : groups) {
    std::vector<size_t> runs;
    for (size_t r = 0; r < mask.size(); ++r) {
      if (mask[r]) runs.push_back(r);
    }
    std::vector<std::vector<double>> xs, ys;
    std::vector<std::string> y_names;
    for (const auto& v : a.predictors.values) xs.push_back(Subset(v, runs));
    for (size_t o : members) {
      ys.push_back(Subset(a.outcomes.values[o], runs));
      y_names.push_back(a.outcomes.outcomes[o].name);
    }
    auto grid = BootstrapCorrelationGrid(xs, x_names, ys, y_names, a.options.bootstrap, a.options.threads);
    for (size_t p = 0; p < predictors; ++p) {
      for (size_t k = 0; k < members.size(); ++k) {
        CorrelationCell& cell = a.cells[members[k]][p];
        cell.n = runs.size();
        cell.by_coefficient = std::move(grid[p][k]);
      }
    }
  }
}

// The perp/iso pairs: the main ones first (both present), then every other perp predictor with its iso sibling.
void Differences(RankingAnalysis& a, const SweepResults& results) {
  std::vector<std::pair<size_t, size_t>> pairs;
  a.primary = !a.options.primary.empty() ? a.options.primary
              : !results.primary.empty() ? results.primary
                                         : MainDifferencePairs();
  for (const auto& [perp, iso] : results.primary) {
    for (const std::string& name : {perp, iso}) {
      PC_CHECK(FindPredictor(name) != nullptr, results.path, ": the sweep's primary comparison names '", name,
               "', which is not a predictor (perpcomp rank --list-predictors)");
    }
  }
  for (const auto& [perp, iso] : a.primary) {
    auto p = a.FindPredictor(perp), i = a.FindPredictor(iso);
    if (p && i) pairs.push_back({*p, *i});
  }
  a.main_differences = pairs.size();
  for (size_t p = 0; p < a.predictors.predictors.size(); ++p) {
    const std::string iso = IsoSibling(a.predictors.predictors[p]);
    if (iso.empty()) continue;
    auto i = a.FindPredictor(iso);
    if (!i) continue;
    const bool main = std::any_of(pairs.begin(), pairs.begin() + long(a.main_differences),
                                  [&](const auto& q) { return q.first == p; });
    if (!main) pairs.push_back({p, *i});
  }

  const OutcomeInfo& outcome = a.outcomes.outcomes[a.outcome];
  const std::vector<size_t> with_outcome = a.outcomes.RunsWith(a.outcome);
  DifferenceSpec spec;
  spec.coefficient = a.options.coefficient;
  spec.outcome = outcome.orientation;
  spec.compare = Compare::kOriented;
  spec.outcome_name = outcome.name;

  a.differences.resize(pairs.size());
  // Work items: (pair, family or -1 for all runs); family items for the main pairs only.
  std::vector<std::pair<size_t, int>> items;
  for (size_t k = 0; k < pairs.size(); ++k) {
    a.differences[k].perp = a.predictors.predictors[pairs[k].first].name;
    a.differences[k].iso = a.predictors.predictors[pairs[k].second].name;
    items.push_back({k, -1});
    if (k < a.main_differences) {
      a.differences[k].by_family.resize(a.families.size());
      for (size_t f = 0; f < a.families.size(); ++f) items.push_back({k, int(f)});
    }
  }
  ParallelFor(items.size(), a.options.threads, [&](size_t w) {
    const auto [k, family] = items[w];
    std::vector<size_t> runs;
    for (size_t r : with_outcome) {
      if (family < 0 || results.runs[r].method_family != a.families[size_t(family)]) runs.push_back(r);
    }
    DifferenceSpec s = spec;
    s.a_name = a.differences[k].perp;
    s.b_name = a.differences[k].iso;
    // No run left (a single family) gives "insufficient" like any n < 5.
    BootstrapDifference d = BootstrapCorrelationDifference(
        Subset(a.predictors.values[pairs[k].first], runs), Subset(a.predictors.values[pairs[k].second], runs),
        Subset(a.outcomes.values[a.outcome], runs), s, a.options.bootstrap);
    if (family < 0) {
      a.differences[k].all = std::move(d);
    } else {
      FamilyLeftOut& f = a.differences[k].by_family[size_t(family)];
      f.family = a.families[size_t(family)];
      f.remaining = runs.size();
      f.left_out = with_outcome.size() - runs.size();
      f.difference = std::move(d);
    }
  });
}

// An index in [0, n), unbiased (rejection).
size_t UniformIndex(size_t n, std::mt19937_64& rng) {
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do {
    x = rng();
  } while (x >= limit);
  return static_cast<size_t>(x % n);
}

// The split-half check of the best of many (HeldOutCheck).
HeldOutCheck HeldOut(const RankingAnalysis& a, const std::vector<size_t>& with_outcome) {
  HeldOutCheck h;
  h.splits = a.options.held_out_splits;
  const size_t n = with_outcome.size();
  h.half = n / 2;
  if (h.splits == 0) {
    h.detail = "not asked for";
    return h;
  }
  if (h.half < kMinObservations || n - h.half < kMinObservations) {
    h.detail = Str("insufficient: ", n, " runs, each half needs ", kMinObservations);
    return h;
  }
  const OutcomeInfo& outcome = a.outcomes.outcomes[a.outcome];
  const std::vector<double>& y_all = a.outcomes.values[a.outcome];
  auto strength = [&](size_t p, const std::vector<size_t>& runs) -> std::optional<double> {
    const Stat s = Correlation(a.options.coefficient, Subset(a.predictors.values[p], runs), Subset(y_all, runs));
    if (!s.ok()) return std::nullopt;
    const PredictorInfo& info = a.predictors.predictors[p];
    return reports::Strength(*s.value, info.compare(), info.orientation(), outcome.orientation);
  };
  std::mt19937_64 rng(a.options.bootstrap.seed ^ 0x5eed5011ULL);
  std::vector<double> in_sample;
  for (size_t s = 0; s < h.splits; ++s) {
    std::vector<size_t> runs = with_outcome;
    for (size_t i = runs.size(); i > 1; --i) std::swap(runs[i - 1], runs[UniformIndex(i, rng)]);
    const std::vector<size_t> pick(runs.begin(), runs.begin() + long(h.half)), rest(runs.begin() + long(h.half), runs.end());
    std::optional<size_t> chosen;
    double best = 0;
    for (size_t p = 0; p < a.predictors.predictors.size(); ++p) {
      const auto v = strength(p, pick);
      if (v && (!chosen || *v > best)) {
        chosen = p;
        best = *v;
      }
    }
    if (!chosen) continue;
    if (a.best && *chosen == *a.best) ++h.same_as_best;
    in_sample.push_back(best);
    if (const auto v = strength(*chosen, rest)) h.held_out.push_back(*v);
  }
  if (h.held_out.empty()) {
    h.detail = "no split gave a defined coefficient";
    return h;
  }
  std::vector<double> sorted = h.held_out;
  std::sort(sorted.begin(), sorted.end());
  h.median = QuantileSorted(sorted, 0.5);
  h.q10 = QuantileSorted(sorted, 0.1);
  h.q90 = QuantileSorted(sorted, 0.9);
  std::sort(in_sample.begin(), in_sample.end());
  h.in_sample_median = QuantileSorted(in_sample, 0.5);
  return h;
}

std::vector<size_t> OrderRuns(const OutcomeMatrix& m, size_t o) {
  std::vector<size_t> finite, non_finite, absent;
  for (size_t r = 0; r < m.values[o].size(); ++r) {
    if (!m.present[o][r])
      absent.push_back(r);
    else if (std::isfinite(m.values[o][r]))
      finite.push_back(r);
    else
      non_finite.push_back(r);
  }
  std::vector<size_t> order;
  for (size_t k : OrderByDamage(Subset(m.values[o], finite), m.outcomes[o].orientation)) order.push_back(finite[k]);
  order.insert(order.end(), non_finite.begin(), non_finite.end());
  order.insert(order.end(), absent.begin(), absent.end());
  return order;
}

std::string Percent(double share) {
  return FormatFixed(100.0 * share, 1) + "%";
}

}  // namespace

void RankOptions::Validate() const {
  bootstrap.Validate();
  PC_CHECK(bootstrap.resamples <= 1000000, "--bootstrap: ", bootstrap.resamples,
           " resamples is too many (at most 1000000)");
  PC_CHECK(threads >= 1, "--threads: must be >= 1 (got ", threads, ")");
}

const BootstrapInterval& CorrelationCell::at(Coefficient c) const {
  return by_coefficient.at(CoefficientIndex(c));
}

std::optional<double> RankingAnalysis::Strength(size_t outcome_index, size_t predictor) const {
  const Stat& s = Cell(outcome_index, predictor).at(options.coefficient).estimate;
  if (!s.ok()) return std::nullopt;
  const PredictorInfo& p = predictors.predictors[predictor];
  return reports::Strength(*s.value, p.compare(), p.orientation(), outcomes.outcomes[outcome_index].orientation);
}

std::vector<size_t> RankingAnalysis::ByStrength() const {
  std::vector<size_t> idx(predictors.predictors.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::stable_sort(idx.begin(), idx.end(), [&](size_t x, size_t y) {
    auto sx = Strength(outcome, x), sy = Strength(outcome, y);
    if (sx.has_value() != sy.has_value()) return sx.has_value();
    return sx && *sx > *sy;
  });
  return idx;
}

std::optional<size_t> RankingAnalysis::FindPredictor(const std::string& name) const {
  for (size_t i = 0; i < predictors.predictors.size(); ++i) {
    if (predictors.predictors[i].name == name) return i;
  }
  return std::nullopt;
}

RankingAnalysis AnalyzeSweep(const SweepResults& results, const RankOptions& options) {
  options.Validate();
  RankingAnalysis a;
  a.options = options;
  a.predictors = ExtractPredictors(results, SelectPredictors(PredictorCatalogue(), options.predictors));
  PC_CHECK(!a.predictors.predictors.empty(), results.path,
           ": none of the selected predictors is available in every run (",
           a.predictors.left_out.empty() ? std::string("none selected") : a.predictors.left_out.front(), ")");
  a.outcomes = ExtractOutcomes(results);
  PC_CHECK(!a.outcomes.outcomes.empty(), results.path, ": no run has a downstream score (downstream/delta_nll, ...)");
  a.outcome = a.outcomes.Find(options.outcome);
  for (const SweepRun& r : results.runs) {
    if (std::find(a.families.begin(), a.families.end(), r.method_family) == a.families.end()) {
      a.families.push_back(r.method_family);
    }
  }
  for (const std::string& name : MainPredictorNames()) {
    if (auto i = a.FindPredictor(name)) a.main.push_back(*i);
  }

  Correlate(a);
  Differences(a, results);

  const std::vector<size_t> with_outcome = a.outcomes.RunsWith(a.outcome);
  std::vector<std::string> groups;
  for (size_t r : with_outcome) groups.push_back(results.runs[r].method_family);
  const std::vector<double> y = Subset(a.outcomes.values[a.outcome], with_outcome);
  for (size_t m : a.main) {
    const VariableNames names{a.predictors.predictors[m].name, a.outcomes.outcomes[a.outcome].name};
    a.main_left_out.push_back(
        LeaveOneGroupOut(options.coefficient, Subset(a.predictors.values[m], with_outcome), y, groups, names));
  }

  const std::vector<size_t> by_strength = a.ByStrength();
  if (!by_strength.empty() && a.Strength(a.outcome, by_strength.front())) a.best = by_strength.front();
  a.held_out = HeldOut(a, with_outcome);
  a.order = OrderRuns(a.outcomes, a.outcome);
  return a;
}

std::vector<double> PredictorDamageRanks(const PredictorInfo& p, const std::vector<double>& values) {
  std::vector<size_t> finite;
  std::vector<double> damage;
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) continue;
    finite.push_back(i);
    damage.push_back(p.direction == Direction::kSigned ? std::fabs(values[i] - p.centre) : values[i]);
  }
  const Orientation o =
      p.direction == Direction::kHigherIsBetter ? Orientation::kHigherIsBetter : Orientation::kHigherIsWorse;
  const std::vector<double> ranks = DamageRanks(damage, o);
  std::vector<double> out(values.size(), std::numeric_limits<double>::quiet_NaN());
  for (size_t k = 0; k < finite.size(); ++k) out[finite[k]] = ranks[k];
  return out;
}

namespace {

// Where the runs came from: " of sweep 'S'", or " from saved tables: DIR 24, DIR2 24 (sweeps 'a', 'b')".
std::string SourceText(const SweepResults& results) {
  if (results.tables.empty()) return results.sweep.empty() ? "" : " of sweep '" + results.sweep + "'";
  std::vector<std::string> folders, sweeps;
  for (const TablesFolder& f : results.tables) {
    folders.push_back(Str(f.path, " ", results.RunsFrom(f)));
    for (const std::string& s : f.sweeps) {
      if (std::find(sweeps.begin(), sweeps.end(), "'" + s + "'") == sweeps.end()) sweeps.push_back("'" + s + "'");
    }
  }
  return Str(" from saved tables: ", Join(folders, ", "),
             sweeps.empty() ? "" : Str(" (sweep", sweeps.size() == 1 ? " " : "s ", Join(sweeps, ", "), ")"));
}

}  // namespace

std::vector<std::string> UncheckedFolders(const SweepResults& results) {
  std::vector<std::string> out;
  for (const TablesFolder& f : results.tables) {
    if (!f.checked) out.push_back(f.path);
    for (const std::string& u : f.unchecked) out.push_back(u + " (joined into " + f.path + ")");
  }
  return out;
}

std::string UncheckedNote(const std::vector<std::string>& unchecked) {
  return Str("no rank_inputs.json in ", Join(unchecked, ", "),
             " (written before rank recorded it): the conventions, reference scores and measure settings of those "
             "runs are unknown and were not checked");
}

std::string Headline(const SweepResults& results, const RankingAnalysis& a) {
  const OutcomeInfo& outcome = a.outcomes.outcomes[a.outcome];
  const std::string coef = CoefficientTitle(a.options.coefficient);
  std::map<std::string, int> family_runs;
  for (const SweepRun& r : results.runs) family_runs[r.method_family]++;
  std::vector<std::string> fam;
  for (const std::string& f : a.families) fam.push_back(Str(f, " ", family_runs[f]));
  std::string out;
  out += Str("perpcomp rank: ", results.runs.size(), " run", results.runs.size() == 1 ? "" : "s", SourceText(results));
  if (!results.selection.empty()) {
    out += Str(" (selected by --runs '", results.selection, "': ", results.runs.size(), " of the ",
               results.tables.empty() ? "file's " : "tables' ", results.runs_in_file, ")");
  }
  if (results.runs_total > 0 && results.runs_complete < results.runs_total) {
    out += Str(" (", results.runs_complete, " of ", results.runs_total, " runs complete",
               results.shard.empty() ? "" : ", shard " + results.shard, ")");
  }
  out += Str("; families: ", Join(fam, ", "), "\n");
  const std::vector<std::string> unchecked = UncheckedFolders(results);
  if (!unchecked.empty()) {
    out += "settings not checked: " + UncheckedNote(unchecked) + "\n";
  }
  if (!results.failed.empty()) {
    std::vector<std::string> names;
    for (const auto& [run, error] : results.failed) names.push_back(run + " (" + error + ")");
    out += Str(results.failed.size(), results.failed.size() == 1 ? " run failed and is" : " runs failed and are",
               " not ranked: ", Join(names, "; "), "\n");
  }
  out += Str("outcome: ", outcome.name, " (", outcome.title, "); ", coef, "; bootstrap ", a.options.bootstrap.resamples,
             " resamples, seed ", a.options.bootstrap.seed, ", ", FormatFixed(100 * a.options.bootstrap.confidence, 0),
             "% intervals; ", a.predictors.predictors.size(), " predictors\n");
  const size_t n = a.outcomes.RunsWith(a.outcome).size();
  if (n < kMinObservations) {
    out += Str("best predictor: none — ", n, " run", n == 1 ? "" : "s", " with ", outcome.name,
               "; a correlation needs at least ", kMinObservations,
               " runs (insufficient). The ranking of runs is in the report.\n");
    out += "perp vs iso: insufficient (the same reason)\n";
    return out;
  }
  std::string exploratory;  // printed after the primary comparisons
  // Exploratory: the strongest of many predictors, with its held-out check.
  if (a.best) {
    const PredictorInfo& p = a.predictors.predictors[*a.best];
    const BootstrapInterval& b = a.Cell(a.outcome, *a.best).at(a.options.coefficient);
    exploratory += Str("exploratory — best predictor: ", p.name, ": ", coef, " = ", FormatWithInterval(b), " (n = ", n,
               "; the strongest of ", a.predictors.predictors.size(), " by point estimate",
               p.direction == Direction::kSigned ? ", compared by |ρ| (a signed quantity)" : "",
               a.predictors.predictors.size() > 1 ? "; the interval is not adjusted for the choice" : "", ")\n");
    const HeldOutCheck& h = a.held_out;
    if (h.detail.empty()) {
      exploratory += Str("  held-out check: chosen on a random half of ", h.half, " runs, its strength on the other half: median ",
                 FormatFixed(h.median, 3), " (10–90%: ", FormatFixed(h.q10, 3), " … ", FormatFixed(h.q90, 3),
                 ") against ", FormatFixed(h.in_sample_median, 3), " on the half it was chosen on; ", h.splits,
                 " splits, the same predictor chosen in ", h.same_as_best, "\n");
    } else {
      exploratory += Str("  held-out check: ", h.detail, "\n");
    }
  } else {
    exploratory += Str("exploratory — best predictor: none — ", coef, " is undefined for every predictor (n/a: see the report)\n");
  }
  if (a.main_differences == 0) {
    out += "primary comparisons: not computed (--predictors left out their perp/iso predictors)\n";
    return out + exploratory;
  }
  out += Str("primary comparisons, declared before looking — ρ(perp) − ρ(iso) (", coef, ", paired bootstrap):\n");
  for (size_t k = 0; k < a.main_differences; ++k) {
    const DifferenceResult& d = a.differences[k];
    const std::string label = d.perp.substr(d.perp.find('.') + 1);  // the pair's common name
    out += Str("  ", label, ": ρ(perp) − ρ(iso) = ", FormatWithInterval(d.all));
    if (!d.all.estimate.ok()) {
      out += Str(" (", d.all.detail, ")\n");
      continue;
    }
    if (!d.all.has_interval()) {
      out += Str("; no interval (", d.all.detail, ")\n");
      continue;
    }
    size_t below = 0;
    for (double v : d.all.samples) below += v < 0 ? 1 : 0;
    const std::string share = Str(d.all.share_positive ? Percent(*d.all.share_positive) : "?", ", d < 0 in ",
                                  Percent(double(below) / double(d.all.samples.size())));
    if (*d.all.lo > 0) {
      out += Str("; the interval excludes 0: perp predicts ", outcome.name, " better than iso in this sweep (d > 0 in ",
                 share, " of resamples)\n");
    } else if (*d.all.hi < 0) {
      out += Str("; the interval excludes 0: iso predicts ", outcome.name, " better than perp in this sweep (d > 0 in ",
                 share, " of resamples)\n");
    } else {
      out += Str("; the interval includes 0: this sweep does not show a difference between perp and iso (d > 0 in ",
                 share, " of resamples)\n");
    }
  }
  return out + exploratory;
}

}  // namespace pc::reports
