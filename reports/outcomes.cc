#include "reports/outcomes.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "core/error.h"
#include "core/strings.h"

namespace pc::reports {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr char kPairFilePrefix[] = "pairs.accuracy_drop.", kLmEvalPrefix[] = "lm_eval.";

// An outcome's value for a run, or nullopt when the run lacks it.
using Getter = std::function<std::optional<double>(const SweepRun&)>;

std::optional<double> Downstream(const SweepRun& r, const std::string& key) {
  auto it = r.downstream.find(key);
  if (it == r.downstream.end()) return std::nullopt;
  return it->second;
}

bool LowerIsBetterMetric(const std::string& metric) {
  return metric.find("perplexity") != std::string::npos || metric.find("bits_per_byte") != std::string::npos ||
         metric.find("loss") != std::string::npos;
}

// The outcomes every results file may have, in report order (the per-file and lm-eval ones follow them).
const std::vector<OutcomeInfo>& FixedOutcomes() {
  const auto worse = Orientation::kHigherIsWorse;
  static const std::vector<OutcomeInfo> fixed = {
      {"delta_nll", "ΔNLL (nats/token)", "mean NLL of the run minus that of the reference, nats per predicted token",
       worse},
      {"kl_mean", "KL mean (nats)",
       "mean over predicted tokens of KL(reference ‖ compressed) of the next-token distributions", worse},
      {"kl_p90", "KL p90 (nats)", "90th percentile over predicted tokens of the KL divergence", worse},
      {"kl_p99", "KL p99 (nats)", "99th percentile over predicted tokens of the KL divergence", worse},
      {"top1_disagreement", "top-1 disagreement",
       "1 − the share of predicted tokens where the argmaxes of the two models agree", worse},
      {"pairs.accuracy_drop", "minimal-pair accuracy drop",
       "minimal-pair accuracy of the reference minus that of the run, over every pair", worse}};
  return fixed;
}

const OutcomeInfo& Fixed(const std::string& name) {
  for (const OutcomeInfo& o : FixedOutcomes()) {
    if (o.name == name) return o;
  }
  PC_ASSERT(false, "no fixed outcome ", name);
  return FixedOutcomes().front();
}

OutcomeInfo PairFileOutcome(const std::string& file) {
  return {kPairFilePrefix + file, "accuracy drop: " + file, "minimal-pair accuracy drop on the file " + file,
          Orientation::kHigherIsWorse};
}

// lm_eval.<task>.<metric>[,<filter>]: the filter is written unless it is "none" (or empty).
OutcomeInfo LmEvalOutcome(const std::string& task, const std::string& metric, const std::string& filter) {
  const std::string key = metric + (filter.empty() || filter == "none" ? "" : "," + filter);
  const Orientation o = LowerIsBetterMetric(metric) ? Orientation::kHigherIsWorse : Orientation::kHigherIsBetter;
  return {kLmEvalPrefix + task + "." + key, task + " " + key,
          Str("lm-evaluation-harness score ", task, " ", key, " (imported; ",
              o == Orientation::kHigherIsBetter ? "higher is better" : "lower is better", ")"),
          o};
}

void Add(OutcomeMatrix* m, const SweepResults& s, OutcomeInfo info, const Getter& get) {
  std::vector<double> values(s.runs.size(), kNaN);
  std::vector<uint8_t> present(s.runs.size(), 0);
  bool any = false;
  for (size_t i = 0; i < s.runs.size(); ++i) {
    if (auto v = get(s.runs[i])) {
      values[i] = *v;
      present[i] = 1;
      any = true;
    }
  }
  if (!any) return;
  m->outcomes.push_back(std::move(info));
  m->values.push_back(std::move(values));
  m->present.push_back(std::move(present));
}

// Runs read from saved tables: the outcome columns every folder has (the first folder's order), values as saved.
void AddSaved(OutcomeMatrix* m, const SweepResults& s) {
  std::vector<std::string> names;
  for (const TablesFolder& f : s.tables) {
    for (const std::string& name : f.outcomes) {
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
  }
  for (const std::string& name : names) {
    const auto lacking = std::find_if(s.tables.begin(), s.tables.end(), [&](const TablesFolder& f) {
      return std::find(f.outcomes.begin(), f.outcomes.end(), name) == f.outcomes.end();
    });
    if (lacking != s.tables.end()) {
      m->left_out.push_back(Str(name, ": not in ", lacking->path, "/outcome_values.csv"));
      continue;
    }
    const std::optional<OutcomeInfo> info = DescribeOutcome(name);
    PC_ASSERT(info.has_value(), "the tables reader kept an unknown outcome column ", name);
    Add(m, s, *info, [&name](const SweepRun& r) -> std::optional<double> {
      PC_ASSERT(r.saved.has_value(), "run ", r.name, " of saved tables has no saved values");
      const auto it = r.saved->outcomes.find(name);
      if (it == r.saved->outcomes.end()) return std::nullopt;
      return it->second;
    });
  }
}

}  // namespace

size_t OutcomeMatrix::Find(const std::string& name) const {
  std::vector<std::string> names;
  for (size_t i = 0; i < outcomes.size(); ++i) {
    if (outcomes[i].name == name) return i;
    names.push_back(outcomes[i].name);
  }
  for (const std::string& note : left_out) {
    if (StartsWith(note, name + ": ")) PC_THROW("--outcome: '", name, "' is left out (", note, ")");
  }
  PC_THROW("--outcome: '", name, "' is not an outcome of this results file (outcomes: ", Join(names, ", "), ")");
}

std::vector<size_t> OutcomeMatrix::RunsWith(size_t o) const {
  std::vector<size_t> runs;
  for (size_t i = 0; i < present.at(o).size(); ++i) {
    if (present[o][i]) runs.push_back(i);
  }
  return runs;
}

std::optional<OutcomeInfo> DescribeOutcome(const std::string& name) {
  for (const OutcomeInfo& o : FixedOutcomes()) {
    if (o.name == name) return o;
  }
  if (StartsWith(name, kPairFilePrefix) && name.size() > sizeof kPairFilePrefix - 1) {
    return PairFileOutcome(name.substr(sizeof kPairFilePrefix - 1));
  }
  const size_t dot = name.find('.', sizeof kLmEvalPrefix - 1);
  if (!StartsWith(name, kLmEvalPrefix) || dot == std::string::npos || dot + 1 == name.size()) return std::nullopt;
  const std::string key = name.substr(dot + 1);
  const size_t comma = key.find(',');
  return LmEvalOutcome(name.substr(sizeof kLmEvalPrefix - 1, dot - (sizeof kLmEvalPrefix - 1)), key.substr(0, comma),
                       comma == std::string::npos ? "" : key.substr(comma + 1));
}

OutcomeMatrix ExtractOutcomes(const SweepResults& s) {
  OutcomeMatrix m;
  if (!s.tables.empty()) {
    AddSaved(&m, s);
    return m;
  }
  for (const char* key : {"delta_nll", "kl_mean", "kl_p90", "kl_p99"}) {
    Add(&m, s, Fixed(key), [key](const SweepRun& r) { return Downstream(r, key); });
  }
  Add(&m, s, Fixed("top1_disagreement"), [](const SweepRun& r) -> std::optional<double> {
    auto a = Downstream(r, "top1_agreement");
    if (!a) return std::nullopt;
    return 1.0 - *a;
  });
  Add(&m, s, Fixed("pairs.accuracy_drop"), [](const SweepRun& r) -> std::optional<double> {
    if (!r.has_pairs || std::isnan(r.pairs_accuracy_drop)) return std::nullopt;
    return r.pairs_accuracy_drop;
  });

  std::set<std::string> files;
  for (const SweepRun& r : s.runs) {
    for (const PairFileScore& f : r.pair_files) {
      if (!std::isnan(f.accuracy_drop)) files.insert(f.file);
    }
  }
  if (files.size() >= 2) {
    for (const std::string& file : files) {
      Add(&m, s, PairFileOutcome(file), [file](const SweepRun& r) -> std::optional<double> {
        for (const PairFileScore& f : r.pair_files) {
          if (f.file == file && !std::isnan(f.accuracy_drop)) return f.accuracy_drop;
        }
        return std::nullopt;
      });
    }
  }

  std::set<std::tuple<std::string, std::string, std::string>> scores;
  for (const SweepRun& r : s.runs) {
    for (const LmEvalScore& e : r.lm_eval) {
      if (!EndsWith(e.metric, "_stderr")) scores.insert({e.task, e.metric, e.filter});
    }
  }
  for (const auto& [task, metric, filter] : scores) {
    Add(&m, s, LmEvalOutcome(task, metric, filter),
        [task = task, metric = metric, filter = filter](const SweepRun& r) -> std::optional<double> {
          for (const LmEvalScore& e : r.lm_eval) {
            if (e.task == task && e.metric == metric && e.filter == filter) return e.value;
          }
          return std::nullopt;
        });
  }
  return m;
}

}  // namespace pc::reports
