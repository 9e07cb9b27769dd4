// pipeline/sensitivity.h — `perpcomp sensitivity`: the measured cost of every candidate setting for
// every block linear (or group of linears sharing a setting), each compressed alone on the
// reference's inputs, as every predictor `perpcomp allocate` can minimise (docs/ALLOCATION.md).
//
// One pass over the blocks, like the engine with original outputs propagated:
//   X_l (N, L, d) ──► original block ──► Y_l (reference; X_{l+1} = Y_l)
//   for each unit u of block l and candidate c:
//     CompressLinearsAlone(u's linears, c's method, statistics on X_l)   (compress/engine.h)
//     Ŷ = block(X_l[:E])            local: SplitAgainstSelf(Y_l, Ŷ) → iso, ∥, ⊥ (relative to Σ‖Y‖²)
//     [--accumulated] Ŷ through blocks l+1..n-1 (uncompressed) vs the reference final state
//     [--kl]          KL(reference ‖ compressed) of the next-token distributions at the logits
//                     (the reference's log-probabilities computed once, SensitivityOptions::kl_cache_bytes)
//     restore the block
// Cost (block forwards over the N windows): n for the reference, plus per (unit, candidate) the
// method's statistics passes (0 for rtn/magnitude, 1, or one per input stage when true-sequential;
// AWQ's own search is extra), E/N for the local error, (n−1−l)·E/N more with --accumulated;
// forward-equivalents = that total / n (printed and stored).
#pragma once

#include <cstdint>
#include <string>

#include "pipeline/compress_run.h"

namespace pc::pipeline {

struct SensitivityOptions {
  std::string model_dir;
  std::string candidates_file;
  std::string out;  // HDF5, kind "sensitivity" (docs/HDF5.md)
  bool overwrite = false;
  CalibOverrides calib;         // samples default 32, windowing random, seq_len min(512, context)
  int64_t measure_windows = 0;  // E: windows the errors are measured on (0: all N)
  int64_t micro_batch = 0;
  bool accumulated = false;
  bool kl = false;  // implies accumulated
  // --kl: the reference's log-probabilities on the E windows (E·L·vocab floats) are computed once
  // and kept when they fit in this many bytes (one head forward per row instead of two);
  // otherwise recomputed for every row. The KL values are the same either way.
  double kl_cache_bytes = 1024.0 * 1024.0 * 1024.0;
};

struct SensitivityResult {
  int units = 0, candidates = 0, layers = 0;
  double block_forwards = 0;       // in N-window block forwards
  double forward_equivalents = 0;  // block_forwards / layers
  double head_forwards = 0;        // in N-window head forwards (--kl)
  double seconds = 0;
};

SensitivityResult RunSensitivity(const SensitivityOptions& options);

}  // namespace pc::pipeline
