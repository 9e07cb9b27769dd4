#include "compress/sparsity.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/strings.h"

namespace pc {

std::string SparsityPattern::Describe() const {
  if (nm()) return std::to_string(n) + ":" + std::to_string(m);
  return FormatDouble(100.0 * ratio, 6) + "% unstructured";
}

namespace {
// A positive decimal integer of at most 9 digits, or -1.
int64_t SmallPositive(const std::string& s) {
  if (s.empty() || s.size() > 9) return -1;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}
}  // namespace

SparsityPattern ParseSparsityPattern(double sparsity, const std::string& pattern, const std::string& where) {
  PC_CHECK(std::isfinite(sparsity) && sparsity >= 0 && sparsity < 1, where, ": 'sparsity' = ", FormatDouble(sparsity),
           " must lie in [0, 1) (the fraction of weights pruned)");
  SparsityPattern p;
  p.ratio = sparsity;
  if (pattern == "unstructured") return p;
  const size_t colon = pattern.find(':');
  const int64_t n = colon == std::string::npos ? -1 : SmallPositive(pattern.substr(0, colon));
  const int64_t m = colon == std::string::npos ? -1 : SmallPositive(pattern.substr(colon + 1));
  PC_CHECK(n >= 0 && m >= 0, where, ": 'pattern' = '", pattern,
           "' is not understood; expected 'unstructured' or 'N:M' with integers 1 <= N < M (e.g. '2:4': 2 zeros in "
           "every 4 consecutive weights of a row)");
  PC_CHECK(n >= 1 && n < m, where, ": 'pattern' = '", pattern, "' needs 1 <= N < M (N zeros in every M consecutive ",
           "weights), got N = ", n, ", M = ", m);
  p.n = n;
  p.m = m;
  p.ratio = static_cast<double>(n) / static_cast<double>(m);
  PC_CHECK(std::fabs(sparsity - p.ratio) <= 1e-6, where, ": 'pattern' = '", pattern,
           "' prunes N/M = ", FormatDouble(p.ratio), " of the weights but 'sparsity' = ", FormatDouble(sparsity),
           "; set 'sparsity: ", FormatDouble(p.ratio), "' or use pattern 'unstructured'");
  return p;
}

std::vector<ParamSpec> SparsityParamSpecs() {
  return {
      ParamSpec::Double("sparsity", 0.5, "fraction of weights set to zero, in [0, 1); N/M for an N:M pattern", 0, 1),
      ParamSpec::String("pattern", "unstructured",
                        "'unstructured' or 'N:M' (N zeros in every M consecutive input weights of a row, e.g. '2:4')",
                        {}),
  };
}

SparsityPattern SparsityFromParams(const MethodParams& p, const std::string& where) {
  return ParseSparsityPattern(p.Double("sparsity"), p.String("pattern"), where);
}

at::Tensor KSmallestPerRow(const at::Tensor& score, int64_t k) {
  PC_ASSERT(score.dim() == 2 && k >= 0 && k <= score.size(1));
  const int64_t rows = score.size(0), cols = score.size(1);
  if (k == 0 || score.numel() == 0) return at::zeros(score.sizes(), at::kBool);
  if (k == cols) return at::ones(score.sizes(), at::kBool);
  // Per row: the k-th smallest value (nth_element on a copy); everything below it is pruned, and
  // values equal to it fill the remaining slots in column order — the set a stable sort picks.
  // NaN ranks as +inf (never expected: scores come from finite weights and statistics).
  at::Tensor s = score.to(at::kDouble).contiguous();
  at::Tensor mask = at::zeros({rows, cols}, at::kBool);
  const double* sp = s.data_ptr<double>();
  bool* mp = mask.data_ptr<bool>();
  auto key = [](double v) { return std::isnan(v) ? INFINITY : v; };
  at::parallel_for(0, rows, std::max<int64_t>(1, (1 << 16) / cols), [&](int64_t r0, int64_t r1) {
    std::vector<double> buf(cols);
    for (int64_t r = r0; r < r1; ++r) {
      const double* row = sp + r * cols;
      bool* m = mp + r * cols;
      for (int64_t c = 0; c < cols; ++c) buf[c] = key(row[c]);
      std::nth_element(buf.begin(), buf.begin() + (k - 1), buf.end());
      const double thr = buf[k - 1];
      int64_t need = k;
      for (int64_t c = 0; c < cols; ++c) need -= key(row[c]) < thr;
      for (int64_t c = 0; c < cols; ++c) {
        const double v = key(row[c]);
        if (v < thr) {
          m[c] = true;
        } else if (v == thr && need > 0) {
          m[c] = true;
          --need;
        }
      }
    }
  });
  return mask;
}

at::Tensor KSmallestOverall(const at::Tensor& score, int64_t k) {
  return KSmallestPerRow(score.reshape({1, -1}), k).reshape(score.sizes());
}

at::Tensor NmMask(const at::Tensor& score, int64_t n, int64_t m) {
  PC_ASSERT(score.dim() == 2 && n >= 1 && n < m);
  const int64_t rows = score.size(0), cols = score.size(1), windows = cols / m;
  at::Tensor mask = at::zeros(score.sizes(), at::kBool);
  if (windows == 0) return mask;
  at::Tensor s = score.narrow(1, 0, windows * m).reshape({rows * windows, m});  // one window per row
  mask.narrow(1, 0, windows * m).copy_(KSmallestPerRow(s, n).reshape({rows, windows * m}));
  return mask;
}

at::Tensor RowPatternMask(const at::Tensor& score, const SparsityPattern& p) {
  if (p.nm()) return NmMask(score, p.n, p.m);
  return KSmallestPerRow(score, static_cast<int64_t>(std::floor(p.ratio * static_cast<double>(score.size(1)))));
}

at::Tensor MagnitudeMask(const at::Tensor& w, const SparsityPattern& p, bool layer_wide) {
  at::Tensor score = w.abs().to(at::kFloat);  // exact for f32, bf16, f16 weights
  if (!layer_wide) return RowPatternMask(score, p);
  PC_ASSERT(!p.nm(), "layer-wide magnitude pruning is unstructured");
  return KSmallestOverall(score, static_cast<int64_t>(std::floor(p.ratio * static_cast<double>(w.numel()))));
}

at::Tensor MagnitudePruned(const at::Tensor& w, const SparsityPattern& p, bool layer_wide) {
  return w.masked_fill(MagnitudeMask(w, p, layer_wide), 0);
}

int64_t RowPatternZeros(int64_t rows, int64_t cols, const SparsityPattern& p) {
  if (p.nm()) return rows * (cols / p.m) * p.n;
  return rows * static_cast<int64_t>(std::floor(p.ratio * static_cast<double>(cols)));
}

void RecordPattern(const SparsityPattern& p, int64_t rows, int64_t cols, int64_t pruned, Record& record) {
  record.text["pattern"] = p.nm() ? std::to_string(p.n) + ":" + std::to_string(p.m) : "unstructured";
  record.values["target_sparsity"] = p.ratio;
  record.values["pruned"] = static_cast<double>(pruned);
  record.values["pruned_fraction"] =
      rows * cols > 0 ? static_cast<double>(pruned) / static_cast<double>(rows * cols) : 0;
  if (p.nm()) {
    record.values["nm_n"] = static_cast<double>(p.n);
    record.values["nm_m"] = static_cast<double>(p.m);
    record.values["nm_tail_columns"] = static_cast<double>(cols % p.m);  // left dense
  }
}

}  // namespace pc
