// tools/probe_report.h — the tables (terminal, HTML) and the self-contained HTML pages of
// `perpcomp probe` (docs/SCIENCE.md). The probes library computes; this file presents (it may use
// reports/, which probes/ may not).
#pragma once

#include <string>
#include <vector>

#include "probes/decompose.h"
#include "probes/norm_depth.h"
#include "probes/perturb.h"
#include "probes/scale.h"
#include "reports/table.h"

namespace pc::cli {

// What a page says about the run (also the HDF5 root attributes).
struct ProbeContext {
  std::string probe;  // decompose | scale | perturb
  std::string model, model_type, norm;  // norm: "LayerNorm" | "RMSNorm"
  int layers = 0;
  std::string text, text_sha256;
  int64_t windows = 0, seq_len = 0;
  std::vector<std::string> pair_files;
  std::string command;
};

// ‖h‖ against parse depth (and, as a control, against token position), per layer.
struct NormDepthRow {
  int layer = 0;
  int64_t words = 0;
  double pearson = 0, spearman = 0;                  // ‖h‖ vs depth
  double pearson_position = 0, spearman_position = 0;  // ‖h‖ vs token position
};
struct NormDepthStats {
  std::vector<NormDepthRow> rows;
  double spearman_depth_position = 0;  // depth vs token position (the confound)
  int64_t sentences = 0, unaligned = 0;
};
NormDepthStats CorrelateNormDepth(const probes::NormDepthData& data);

reports::TextTable DecomposeUpdatesTable(const probes::DecomposeResult& r);
reports::TextTable DecomposeValueTable(const probes::DecomposeResult& r);  // per layer, mean over heads
reports::TextTable ScaleTable(const probes::ScaleResult& r);
reports::TextTable PerturbSummaryTable(const probes::PerturbResult& r);
reports::TextTable PerturbRatioTable(const probes::PerturbResult& r, const std::vector<double>& deltas);
reports::TextTable RepairTable(const probes::PerturbResult& r);
reports::TextTable HiddenNormsTable(const probes::PerturbResult& r);
reports::TextTable NormDepthTable(const NormDepthStats& s);

std::string DecomposeHtml(const ProbeContext& c, const probes::DecomposeResult& r);
std::string ScaleHtml(const ProbeContext& c, const probes::ScaleResult& r, const probes::ScaleOptions& o);
std::string PerturbHtml(const ProbeContext& c, const probes::PerturbResult& r, const probes::PerturbOptions& o,
                        const NormDepthStats* depth);

}  // namespace pc::cli
