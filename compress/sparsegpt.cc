// compress/sparsegpt.cc — SparseGPT (IST-DASLab/sparsegpt fasterprune, docs/PRUNING.md "SparseGPT";
// docs/PRUNING.md "SparseGPT").
//
// H = (2/n) XᵀX, damped, U = upper Cholesky factor of H⁻¹ (compress/hessian.h). Columns are walked
// in blocks of block_size; the mask is chosen by the OBS saliency w² / U_cc² from the current
// (error-updated) weights:
//   unstructured  per block, before its columns: exactly floor(ratio × out × count) smallest of
//                 the block (all rows together: adaptive mask selection), ties row-major first;
//   N:M           per row, when the walk reaches a window's first column: N smallest of the M
//                 columns; windows start at column 0, a tail shorter than M stays dense.
// Each column: q = w with its pruned entries 0 (then fake-quantized with the shared quantizer
// when bits > 0, pruned entries kept 0); the error (w − q)/U_cc is fed into the later columns.
// Dead input columns (never non-zero in calibration) have saliency 0: pruned first, but only as
// many as the exact count allows; the rest keep their weights (they do not affect the
// calibration outputs).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "compress/hessian.h"
#include "compress/method.h"
#include "compress/quant_params.h"
#include "compress/quantizer.h"
#include "compress/sparsity.h"
#include "core/error.h"

namespace pc {
namespace {

class SparseGpt final : public Method {
 public:
  SparseGpt(const MethodParams& p, const std::string& where)
      : Method("sparsegpt", p),
        pattern_(SparsityFromParams(p, where)),
        quantize_(p.Int("bits") != 0),
        damp_(p.Double("damp")),
        block_(p.Int("block_size")) {
    if (quantize_) spec_ = QuantSpecFromParams(p, where);
  }
  uint32_t stats() const override { return kStatGram; }

  void CompressLinear(Linear& linear, const InputStats& stats, Record& record) override {
    const int64_t in = linear.in_features(), out = linear.out_features();
    const std::string what = "sparsegpt '" + linear.name + "'";
    const HessianFactor& factor = SharedHessianFactor(stats, damp_, /*act_order=*/false, what);
    const LayerHessian& hess = factor.hess;
    const InverseFactor& inv = factor.inv;
    at::Tensor w = linear.weight.to(at::kFloat);  // (out, in)
    // d_c² with dead columns at infinity, so that their saliency w²/d² is 0.
    at::Tensor d2 = inv.upper.diagonal().square().masked_fill(hess.dead, INFINITY);  // (in,)
    // Quantizer groups (dynamic, from the current weights) and N:M windows must not straddle blocks.
    const int64_t g = quantize_ ? spec_.GroupLength(in) : in;
    const bool dynamic = quantize_ && g < in;
    int64_t align = pattern_.nm() ? pattern_.m : 1;
    if (dynamic) align = std::lcm(align, g);
    const int64_t block = AlignedBlock(block_, align);
    QuantParams current;
    if (quantize_ && !dynamic) current = ComputeQuantParams(w, spec_);  // one group per row
    QuantSpec column_spec = spec_;
    column_spec.group_size = -1;
    at::Tensor mask1;  // (count, out) bool: the current block's mask, transposed like the walk
    int64_t pruned = 0;
    auto saliency = [&](const at::Tensor& w1, int64_t i, int64_t c, int64_t len) {  // (len, out) -> (out, len)
      return (w1.narrow(0, i, len).square() / d2.narrow(0, c, len).unsqueeze(1)).t();
    };
    auto on_block = [&](int64_t i1, int64_t i2, const at::Tensor& w1) {
      const int64_t count = i2 - i1;
      if (pattern_.nm()) {
        mask1 = at::zeros({count, out}, at::kBool);
        return;
      }
      const int64_t k = static_cast<int64_t>(std::floor(pattern_.ratio * static_cast<double>(out * count)));
      mask1 = KSmallestOverall(saliency(w1, 0, i1, count).contiguous(), k).t().contiguous();
      pruned += k;
    };
    at::Tensor wt = w.t().contiguous();  // (in, out)
    double loss = ObsColumnWalk(wt, inv.upper, block, on_block, [&](int64_t c, int64_t i, const at::Tensor& w1) {
      if (pattern_.nm() && c % pattern_.m == 0 && c + pattern_.m <= in) {
        mask1.narrow(0, i, pattern_.m).copy_(KSmallestPerRow(saliency(w1, i, c, pattern_.m), pattern_.n).t());
        pruned += out * pattern_.n;
      }
      if (dynamic && c % g == 0) {
        const int64_t len = std::min(g, in - c);
        QuantSpec group_spec = spec_;
        group_spec.group_size = len;
        current = ComputeQuantParams(w1.narrow(0, i, len).t(), group_spec);  // (out, 1)
      }
      at::Tensor q = w1[i].masked_fill(mask1[i], 0);  // (out,)
      if (!quantize_) return q;
      return FakeQuantizeWith(q.unsqueeze(1), current, column_spec).squeeze(1).masked_fill_(mask1[i], 0);
    }, "sparsegpt columns " + linear.name);
    linear.weight.copy_(wt.t());
    RecordPattern(pattern_, out, in, pruned, record);
    record.values["bits"] = quantize_ ? spec_.bits : 0;
    if (quantize_) record.values["group_size"] = static_cast<double>(spec_.group_size);
    record.values["obs_loss"] = loss;
    record.values["damp_used"] = inv.damp_used;
    record.values["cholesky_retries"] = inv.retries;
    record.values["dead_columns"] = static_cast<double>(hess.dead_count);
    record.values["block_columns"] = static_cast<double>(block);
  }
  // Magnitude pruning (per row) at the same sparsity and pattern, RTN-quantized when bits > 0.
  at::Tensor NaiveWeight(const at::Tensor& w) const override {
    at::Tensor pruned = MagnitudePruned(w, pattern_);
    if (!quantize_) return pruned;
    return FakeQuantize(pruned, spec_).masked_fill_(pruned == 0, 0);
  }

 private:
  SparsityPattern pattern_;
  bool quantize_;
  QuantSpec spec_;
  double damp_;
  int64_t block_;
};

}  // namespace

void RegisterSparseGpt(MethodRegistry& r) {
  std::vector<ParamSpec> specs = SparsityParamSpecs();
  for (ParamSpec& q : QuantParamSpecs(4, 128)) {
    if (q.name == "bits") q = ParamSpec::Int("bits", 0, "joint quantization bits (0: prune only)", 2, 8, {0});
    specs.push_back(q);
  }
  specs.push_back(
      ParamSpec::Double("damp", 0.01, "damping added to diag(H), as a fraction of its mean (percdamp)", 0, 10));
  specs.push_back(ParamSpec::Int("block_size", 128, "columns per block (mask selection and lazy updates)", 1, 1 << 20));
  r.Add({"sparsegpt",
         "SparseGPT: OBS pruning with Hessian error feedback (IST-DASLab/sparsegpt), optional joint quantization",
         "pruning", specs, "random", /*default_propagate_compressed=*/true,
         [](const MethodParams& p, const std::string& where) {
           return std::unique_ptr<Method>(new SparseGpt(p, where));
         }});
}

}  // namespace pc
