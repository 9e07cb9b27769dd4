#include "reports/outcomes.h"

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

}  // namespace

size_t OutcomeMatrix::Find(const std::string& name) const {
  std::vector<std::string> names;
  for (size_t i = 0; i < outcomes.size(); ++i) {
    if (outcomes[i].name == name) return i;
    names.push_back(outcomes[i].name);
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

OutcomeMatrix ExtractOutcomes(const SweepResults& s) {
  OutcomeMatrix m;
  const auto worse = Orientation::kHigherIsWorse;
  Add(&m, s,
      {"delta_nll", "ΔNLL (nats/token)", "mean NLL of the run minus that of the reference, nats per predicted token",
       worse},
      [](const SweepRun& r) { return Downstream(r, "delta_nll"); });
  Add(&m, s,
      {"kl_mean", "KL mean (nats)",
       "mean over predicted tokens of KL(reference ‖ compressed) of the next-token distributions", worse},
      [](const SweepRun& r) { return Downstream(r, "kl_mean"); });
  Add(&m, s, {"kl_p90", "KL p90 (nats)", "90th percentile over predicted tokens of the KL divergence", worse},
      [](const SweepRun& r) { return Downstream(r, "kl_p90"); });
  Add(&m, s, {"kl_p99", "KL p99 (nats)", "99th percentile over predicted tokens of the KL divergence", worse},
      [](const SweepRun& r) { return Downstream(r, "kl_p99"); });
  Add(&m, s,
      {"top1_disagreement", "top-1 disagreement",
       "1 − the share of predicted tokens where the argmaxes of the two models agree", worse},
      [](const SweepRun& r) -> std::optional<double> {
        auto a = Downstream(r, "top1_agreement");
        if (!a) return std::nullopt;
        return 1.0 - *a;
      });
  Add(&m, s,
      {"pairs.accuracy_drop", "minimal-pair accuracy drop",
       "minimal-pair accuracy of the reference minus that of the run, over every pair", worse},
      [](const SweepRun& r) -> std::optional<double> {
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
      Add(&m, s,
          {"pairs.accuracy_drop." + file, "accuracy drop: " + file, "minimal-pair accuracy drop on the file " + file,
           worse},
          [file](const SweepRun& r) -> std::optional<double> {
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
    const std::string key = metric + (filter.empty() || filter == "none" ? "" : "," + filter);
    const Orientation o = LowerIsBetterMetric(metric) ? Orientation::kHigherIsWorse : Orientation::kHigherIsBetter;
    Add(&m, s,
        {"lm_eval." + task + "." + key, task + " " + key,
         Str("lm-evaluation-harness score ", task, " ", key, " (imported; ",
             o == Orientation::kHigherIsBetter ? "higher is better" : "lower is better", ")"),
         o},
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
