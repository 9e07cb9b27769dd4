// compress/gptq.cc — GPTQ (IST-DASLab/gptq, docs/PRUNING.md "GPTQ").
//
// H = (2/n) XᵀX, damped, U = upper Cholesky factor of H⁻¹ (compress/hessian.h); dead columns
// (diag H = 0) have their weights zeroed; the columns are quantized one by one with GPTQ's own
// quantizer (ComputeGptqQuantParams: the range includes 0), each column's error fed back into the
// columns not yet quantized (lazy updates in blocks of block_size). Group parameters, as the
// reference computes them: dynamic groups when the walk reaches a group's first column, from W as
// it stood when the current lazy block began (not the block's in-block-updated working copy), in
// the walk's (possibly permuted) order; static groups from the weights before the walk (dead
// columns zeroed) in the original column order; group_size -1: one group per row from the weights
// before the dead columns are zeroed. act_order walks the columns by diag(H) descending.
#include <algorithm>
#include <numeric>

#include "compress/hessian.h"
#include "compress/method.h"
#include "compress/quant_params.h"
#include "compress/quantizer.h"
#include "core/error.h"

namespace pc {
namespace {

class Gptq final : public Method {
 public:
  Gptq(const MethodParams& p, const std::string& where)
      : Method("gptq", p),
        spec_(QuantSpecFromParams(p, where)),
        act_order_(p.Bool("act_order")),
        static_groups_(p.Bool("static_groups")),
        true_sequential_(p.Bool("true_sequential")),
        damp_(p.Double("damp")),
        block_(p.Int("block_size")) {
    PC_CHECK(!static_groups_ || spec_.group_size > 0, where,
             ": 'static_groups: true' needs groups, but 'group_size' is -1 (one group per row is already static)");
  }
  uint32_t stats() const override { return kStatGram; }
  bool TrueSequential() const override { return true_sequential_; }

  void CompressLinear(Linear& linear, const InputStats& stats, Record& record) override {
    const int64_t in = linear.in_features();
    const HessianFactor& factor = SharedHessianFactor(stats, damp_, act_order_, "gptq '" + linear.name + "'");
    const LayerHessian& hess = factor.hess;
    const InverseFactor& inv = factor.inv;
    const at::Tensor& perm = factor.perm;  // (in,) walk position -> original column, or undefined
    at::Tensor w = linear.weight.to(at::kFloat);  // (out, in)
    // Per channel (group_size -1): the reference's first find_params, on W before dead columns go.
    QuantParams fixed;
    if (spec_.group_size <= 0) fixed = ComputeGptqQuantParams(w, spec_);  // (out, 1)
    if (hess.dead_count > 0) w.masked_fill_(hess.dead.unsqueeze(0), 0.0f);  // W[:, dead] = 0
    const int64_t g = spec_.GroupLength(in);
    const bool dynamic = spec_.group_size > 0 && !static_groups_;
    if (static_groups_) fixed = ComputeGptqQuantParams(w, spec_);  // (out, groups), original column order
    if (act_order_) w = w.index_select(1, perm);
    const std::vector<int64_t> group_of = GroupOfPosition(in, g, perm);
    QuantSpec column_spec = spec_;
    column_spec.group_size = -1;     // one (out, 1) column with its (out, 1) parameters
    column_spec.zero_point = true;   // GPTQ's codes are unsigned in both modes
    const int64_t out = linear.out_features();
    at::Tensor scale, zero;   // (out,) contiguous float32: the current column's parameters
    int64_t fixed_group = -1;  // the group of `fixed` they hold (static and per-channel parameters)
    auto use = [&](const QuantParams& p) {
      scale = p.scale.reshape({out}).contiguous();
      zero = p.zero.reshape({out}).contiguous();
    };
    at::Tensor qcol = at::empty({out}, at::kFloat);  // the current column compressed, reused
    at::Tensor wt = w.t().contiguous();  // (in, out); rows of the current block stay as the block began
    double loss = ObsColumnWalk(wt, inv.upper, block_, nullptr, [&](int64_t c, int64_t i, const at::Tensor& w1) {
      if (dynamic && c % g == 0) {
        // The reference's find_params(W[:, c:c+g]): W, not the block's working copy W1, so the
        // group's columns as they stood when the lazy block began (its later columns: as they
        // stand before this block's update reaches them).
        const int64_t len = std::min(g, in - c);
        QuantSpec group_spec = spec_;
        group_spec.group_size = len;
        use(ComputeGptqQuantParams(wt.narrow(0, c, len).t(), group_spec));  // (out, 1)
      } else if (!dynamic) {
        const int64_t gi = static_groups_ ? group_of[c] : 0;
        if (gi != fixed_group) use(QuantParams{fixed.scale.narrow(1, gi, 1), fixed.zero.narrow(1, gi, 1)});
        fixed_group = gi;
      }
      PC_ASSERT(w1.is_contiguous() && w1.size(1) == out);
      FakeQuantizeColumn(w1.data_ptr<float>() + i * out, scale.data_ptr<float>(), zero.data_ptr<float>(), out,
                         column_spec, qcol.data_ptr<float>());
      return qcol;
    }, "gptq columns " + linear.name);
    at::Tensor q = wt.t();  // (out, in) in walk order
    if (act_order_) q = q.index_select(1, at::argsort(perm));
    linear.weight.copy_(q);
    record.values["bits"] = spec_.bits;
    record.values["group_size"] = static_cast<double>(spec_.group_size);
    record.values["gptq_loss"] = loss;
    record.values["damp_used"] = inv.damp_used;
    record.values["cholesky_retries"] = inv.retries;
    record.values["dead_columns"] = static_cast<double>(hess.dead_count);
    record.values["block_columns"] = static_cast<double>(block_);
  }
  // Round to nearest with GPTQ's own quantizer (the walk without error feedback).
  at::Tensor NaiveWeight(const at::Tensor& w) const override {
    QuantSpec s = spec_;
    s.zero_point = true;
    return FakeQuantizeWith(w, ComputeGptqQuantParams(w, spec_), s);
  }

 private:
  // Group index (into fixed parameters) of each walk position: the group of its original column.
  static std::vector<int64_t> GroupOfPosition(int64_t in, int64_t g, const at::Tensor& perm) {
    std::vector<int64_t> out(in);
    at::Tensor p = perm.defined() ? perm.contiguous() : at::arange(in, at::kLong);
    const int64_t* pp = p.data_ptr<int64_t>();
    for (int64_t c = 0; c < in; ++c) out[c] = pp[c] / g;
    return out;
  }

  QuantSpec spec_;
  bool act_order_, static_groups_, true_sequential_;
  double damp_;
  int64_t block_;
};

}  // namespace

void RegisterGptq(MethodRegistry& r) {
  std::vector<ParamSpec> specs = QuantParamSpecs(4, 128);
  specs.push_back(ParamSpec::Bool("act_order", false, "walk the columns by diag(H) descending (GPTQ --act-order)"));
  specs.push_back(ParamSpec::Bool("static_groups", false,
                                  "group parameters from the original weights before the walk (GPTQ --static-groups)"));
  specs.push_back(ParamSpec::Bool("true_sequential", false,
                                  "statistics stage by stage within a block: q/k/v, o, gate/up, down, each with the "
                                  "earlier stages quantized (GPTQ --true-sequential)"));
  specs.push_back(
      ParamSpec::Double("damp", 0.01, "damping added to diag(H), as a fraction of its mean (percdamp)", 0, 10));
  specs.push_back(ParamSpec::Int("block_size", 128, "columns per lazy-update block", 1, 1 << 20));
  r.Add({"gptq", "GPTQ: column-wise quantization with Hessian error feedback (IST-DASLab/gptq)", "quantization", specs,
         "random", /*default_propagate_compressed=*/true,
         [](const MethodParams& p, const std::string& where) { return std::unique_ptr<Method>(new Gptq(p, where)); }});
}

}  // namespace pc
