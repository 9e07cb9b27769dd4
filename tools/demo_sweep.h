// tools/demo_sweep.h — the demo's main job: the demo sweep on a model, ranked into a report.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace pc::cli {

// Runs `sweep_file` on `model_dir` with the corpus as calibration, evaluation text and
// minimal pairs; writes results and the report into `staged_out` (final name `final_out`).
nlohmann::json RunDemoSweep(const std::string& model_dir, const std::string& corpus_dir, const std::string& sweep_file,
                            const std::string& staged_out, const std::string& final_out);
void PrintDemoSweep(const nlohmann::json& sweep);

}  // namespace pc::cli
