// probes/results_h5.h — probe results into the groups of a "probe" HDF5 file (docs/HDF5.md "probe").
// The command writes the root attributes (probe, model, text, ...) and commits the staged file.
#pragma once

#include "probes/decompose.h"
#include "probes/norm_depth.h"
#include "probes/perturb.h"
#include "probes/scale.h"
#include "store/group.h"

namespace pc::probes {

// Score as attributes: loss, ppl, tokens, and with pairs accuracy, pairs, correct, ties.
void WriteScoreAttrs(const store::Group& group, const ProbeScore& score);

// Tables updates and value_heads, group histograms (`bins` bins over the central 99% of each distribution).
void WriteDecompose(const store::Group& group, const DecomposeResult& result, int bins);
// Table rows, group grid, group baseline.
void WriteScale(const store::Group& group, const ScaleResult& result, const ScaleOptions& options);
// Group baseline, tables hidden_norms, runs, summary, ratio, repair.
void WritePerturb(const store::Group& group, const PerturbResult& result, const PerturbOptions& options);
// Attributes sentences, unaligned, words; datasets depth, word_index, token_position (words,) and
// norm (layers, words).
void WriteNormDepth(const store::Group& group, const NormDepthData& data);

}  // namespace pc::probes
