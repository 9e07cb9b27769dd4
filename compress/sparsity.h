// compress/sparsity.h — sparsity patterns and exact pruning masks shared by the pruners
// (magnitude, wanda, wanda-perp, sparsegpt).
//
// Exactness (docs/PRUNING.md):
//   per row       exactly floor(ratio × in) zeros in every row (magnitude, Wanda);
//   layer-wide    exactly floor(ratio × numel) zeros in the layer (magnitude scope=layer);
//   N:M           N zeros in every M consecutive input weights of a row, windows starting at
//                 column 0; a tail of in % M columns is left dense and reported;
//   SparseGPT     exactly floor(ratio × size) zeros in every column block it processes.
// Ties are broken as torch.sort(stable=True) does: among equal scores the lower index (column,
// or row-major flat index for layer/block-wide selections) is pruned first.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <string>

#include "compress/method.h"
#include "compress/params.h"

namespace pc {

struct SparsityPattern {
  double ratio = 0.5;  // fraction pruned (N/M for N:M)
  int64_t n = 0;       // N:M: zeros per window; 0 = unstructured
  int64_t m = 0;       // N:M: window length
  bool nm() const { return n > 0; }
  std::string Describe() const;  // "50% unstructured", "2:4"
};

// Parses `pattern` ("unstructured" or "N:M" with integers 1 <= N < M) and checks it against
// `sparsity` (in [0, 1); for N:M it must equal N/M). Errors start with `where`.
SparsityPattern ParseSparsityPattern(double sparsity, const std::string& pattern, const std::string& where);

// The declared parameters every pruner shares: sparsity (default 0.5), pattern (default "unstructured").
std::vector<ParamSpec> SparsityParamSpecs();
SparsityPattern SparsityFromParams(const MethodParams& p, const std::string& where);

// Boolean mask (R, C), true = prune: in every row the k smallest scores, ties to the lower column.
// score (R, C) any floating dtype, finite.
at::Tensor KSmallestPerRow(const at::Tensor& score, int64_t k);
// Boolean mask of score's shape: the k smallest over all elements in row-major order.
at::Tensor KSmallestOverall(const at::Tensor& score, int64_t k);
// Per row: N smallest in every window of M consecutive columns starting at column 0; the
// columns of a tail shorter than M are never pruned. score (R, C).
at::Tensor NmMask(const at::Tensor& score, int64_t n, int64_t m);
// The per-row mask of a pattern (unstructured: floor(ratio × C) per row; N:M: NmMask).
at::Tensor RowPatternMask(const at::Tensor& score, const SparsityPattern& p);

// Magnitude pruning: the mask of |w| (per row by the pattern, or layer-wide when `layer_wide`,
// floor(ratio × numel) zeros), and the pruned copy of w (the pruners' naive counterpart).
at::Tensor MagnitudeMask(const at::Tensor& w, const SparsityPattern& p, bool layer_wide = false);
at::Tensor MagnitudePruned(const at::Tensor& w, const SparsityPattern& p, bool layer_wide = false);

// Zeros that a per-row pattern removes from an (R, C) weight: floor(ratio × C) × R, or N × (C / M) × R.
int64_t RowPatternZeros(int64_t rows, int64_t cols, const SparsityPattern& p);
// Writes "target_sparsity", "pruned", and for N:M "nm_n", "nm_m", "nm_tail_columns" into `record`.
void RecordPattern(const SparsityPattern& p, int64_t rows, int64_t cols, int64_t pruned, Record& record);

}  // namespace pc
