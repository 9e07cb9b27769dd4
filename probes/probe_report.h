// probes/probe_report.h — the tables (terminal, HTML) and the self-contained HTML pages of
// `perpcomp probe` (docs/SCIENCE.md), and the norm-depth correlations they show. Its own library,
// pc_probe_report: pc_probes computes and never includes reports/; this library presents with
// reports/ (format, html, stats, svg). tools/cmd_probe.cc calls it and prints.
#pragma once

#include <string>
#include <vector>

#include "probes/decompose.h"
#include "probes/norm_depth.h"
#include "probes/perturb.h"
#include "probes/scale.h"
#include "reports/table.h"

namespace pc::probes {

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
NormDepthStats CorrelateNormDepth(const NormDepthData& data);

reports::TextTable DecomposeUpdatesTable(const DecomposeResult& r);
reports::TextTable DecomposeValueTable(const DecomposeResult& r);  // per layer, mean over heads
reports::TextTable ScaleTable(const ScaleResult& r);
reports::TextTable PerturbSummaryTable(const PerturbResult& r);
reports::TextTable PerturbRatioTable(const PerturbResult& r, const std::vector<double>& deltas);
reports::TextTable RepairTable(const PerturbResult& r);
reports::TextTable HiddenNormsTable(const PerturbResult& r);
reports::TextTable NormDepthTable(const NormDepthStats& s);

std::string DecomposeHtml(const ProbeContext& c, const DecomposeResult& r);
std::string ScaleHtml(const ProbeContext& c, const ScaleResult& r, const ScaleOptions& o);
std::string PerturbHtml(const ProbeContext& c, const PerturbResult& r, const PerturbOptions& o,
                        const NormDepthStats* depth);

}  // namespace pc::probes
