#include "metrics/lm_eval_import.h"

#include "core/error.h"
#include "core/fs.h"
#include "core/json_util.h"
#include "core/sha256.h"

namespace pc {

LmEvalResults ReadLmEvalResults(const std::string& path) {
  PC_CHECK(fs::Exists(path), "--import-lm-eval: '", path, "' does not exist");
  const std::string bytes = fs::ReadFile(path);
  nlohmann::json j = ParseJson(bytes, path);
  PC_CHECK(j.is_object() && j.contains("results") && j["results"].is_object(), "--import-lm-eval: '", path,
           "' has no \"results\" object (expected an lm-evaluation-harness results file)");
  LmEvalResults r;
  r.path = path;
  r.sha256 = Sha256Hex(bytes);
  for (const auto& [task, metrics] : j["results"].items()) {  // nlohmann's object iterates sorted by key
    PC_CHECK(metrics.is_object(), "--import-lm-eval: '", path, "': results.", task, " is ", metrics.type_name(),
             ", expected an object of metrics");
    for (const auto& [key, value] : metrics.items()) {
      // sample_len: how many documents a task scored (lm-eval writes it beside the scores), not a score
      if (!value.is_number() || key == "sample_len") continue;
      LmEvalScore s;
      s.task = task;
      size_t comma = key.find(',');
      s.metric = comma == std::string::npos ? key : key.substr(0, comma);
      s.filter = comma == std::string::npos ? "" : key.substr(comma + 1);
      s.value = value.get<double>();
      r.scores.push_back(std::move(s));
    }
  }
  PC_CHECK(!r.scores.empty(), "--import-lm-eval: '", path, "' holds no numeric scores under \"results\"");
  if (j.contains("config") && j["config"].is_object() && j["config"].contains("model_args")) {
    const auto& m = j["config"]["model_args"];
    r.model_args = m.is_string() ? m.get<std::string>() : m.dump();
  }
  return r;
}

namespace {
bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}
}  // namespace

std::vector<LmEvalDrop> CompareLmEvalResults(const LmEvalResults& model, const LmEvalResults& reference) {
  std::vector<LmEvalDrop> out;
  for (const auto& s : model.scores) {
    if (EndsWith(s.metric, "_stderr")) continue;
    for (const auto& r : reference.scores) {
      if (r.task != s.task || r.metric != s.metric || r.filter != s.filter) continue;
      LmEvalDrop d;
      d.task = s.task;
      d.metric = s.metric;
      d.filter = s.filter;
      d.value = s.value;
      d.reference = r.value;
      d.lower_is_better = s.metric.find("perplexity") != std::string::npos || s.metric == "bits_per_byte";
      d.drop = d.lower_is_better ? s.value - r.value : r.value - s.value;
      out.push_back(d);
      break;
    }
  }
  PC_CHECK(!out.empty(), "--lm-eval-reference: '", reference.path, "' shares no task/metric with '", model.path,
           "' (run both with the same lm-eval tasks)");
  return out;
}

}  // namespace pc
