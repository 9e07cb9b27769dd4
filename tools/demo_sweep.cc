// The demo's main job: the demo sweep on the LayerNorm model (calibrated on the corpus, evaluated
// on its held-out text and minimal pairs), then the ranking report.
#include "tools/demo_sweep.h"

#include <cstdio>
#include <fstream>

#include "core/error.h"
#include "core/fs.h"
#include "core/log.h"
#include "metrics/pairs_file.h"
#include "model/config.h"
#include "pipeline/run_io.h"
#include "pipeline/sweep_run.h"
#include "reports/ranking_analysis.h"
#include "reports/ranking_report.h"
#include "reports/sweep_results.h"
#include "store/file.h"

namespace pc::cli {

nlohmann::json RunDemoSweep(const std::string& model_dir, const std::string& corpus_dir, const std::string& sweep_file,
                            const std::string& staged_out, const std::string& final_out) {
  pipeline::SweepPlan plan = pipeline::LoadSweepPlan(sweep_file);
  pipeline::SweepInputs in;
  in.model_dir = model_dir;
  in.calib.source = fs::Join(corpus_dir, "train.txt");
  in.calib.seq_len = 64;
  in.eval_path = fs::Join(corpus_dir, "valid.txt");
  pipeline::TextWindows tw = pipeline::LoadTextWindows(in.eval_path, "text", /*seq_len=*/64, /*max_windows=*/64,
                                                       LoadModelConfig(model_dir), model_dir);
  in.windows = tw.windows.tokens;
  in.eval_sha256 = tw.text.sha256;
  in.stream_tokens = tw.windows.stream_tokens;
  in.pair_files = ResolvePairFiles(fs::Join(corpus_dir, "pairs"), "");
  for (const auto& f : in.pair_files) {
    auto p = ReadMinimalPairs(f);
    in.pairs.insert(in.pairs.end(), p.begin(), p.end());
  }
  pipeline::SweepOptions o;
  const std::string sweep_dir = fs::Join(staged_out, "sweep");
  fs::MakeDirs(sweep_dir);
  o.out = fs::Join(sweep_dir, "results.h5");
  o.cache.dir = "";  // one reference, evaluated once inside the sweep
  log::Info("demo", "sweep ", plan.spec.name.value, ": ", sweep_file, " on the LayerNorm model");
  pipeline::SweepSummary summary = pipeline::RunSweep(plan, in, pipeline::SweepConventions(in, o.cache), o);

  // Rank: which error metric predicts the downstream loss across the sweep's runs.
  reports::SweepResults results = reports::ReadSweepResults(o.out);
  reports::RankOptions ro;
  ro.threads = 1;
  ro.Validate();
  reports::RankingAnalysis analysis = reports::AnalyzeSweep(results, ro);
  reports::RankReport report = reports::BuildRankReport(results, analysis, {"perpcomp demo", store::CreatedBy()});
  const std::string report_dir = fs::Join(staged_out, "report");
  fs::MakeDirs(report_dir);
  for (const reports::ReportFile& f : report.files) fs::WriteFileAtomic(fs::Join(report_dir, f.name), f.content);
  return {{"sweep", plan.spec.name.value},
          {"runs", summary.done + summary.skipped},
          {"results", fs::Join(final_out, "sweep/results.h5")},
          {"report", fs::Join(final_out, "report/report.html")},
          {"headline", report.headline}};
}

void PrintDemoSweep(const nlohmann::json& sweep) {
  std::printf("  sweep:    %s (%d runs)\n  report:   %s\n\n%s", sweep["results"].get<std::string>().c_str(),
              sweep["runs"].get<int>(), sweep["report"].get<std::string>().c_str(),
              sweep["headline"].get<std::string>().c_str());
}

}  // namespace pc::cli
