// compress/pruning.cc — magnitude, Wanda and Wanda-⊥ pruning (docs/PRUNING.md).
//
//   magnitude   score |W_ij|; per row (exactly floor(ratio × in) zeros per row), N:M, or
//               layer-wide (scope=layer: exactly floor(ratio × numel) zeros in the layer).
//   wanda       score |W_ij| · ‖X_j‖₂ with ‖X_j‖² = Σ_t x_tj² over all calibration tokens
//               (locuslab/wanda averages per sequence; a common factor does not change the
//               ranking), compared within each output row; N:M over consecutive input columns.
//   wanda-perp  score |W_ij| · sqrt(λ⊥ · Σ_t x_tj²(1 − u_ti²) + λ∥ · Σ_t x_tj² u_ti²) with
//               u_t = y_t / ‖y_t‖ the unit output direction of token t: the perpendicular and
//               parallel energies of the output change that removing W_ij alone causes.
//               λ∥ = λ⊥ = 1 is Wanda exactly.
#include <cmath>

#include "compress/method.h"
#include "compress/sparsity.h"
#include "core/error.h"
#include "core/strings.h"

namespace pc {
namespace {

void ApplyMask(Linear& linear, const at::Tensor& mask, const SparsityPattern& p, Record& record) {
  linear.weight.masked_fill_(mask, 0);
  RecordPattern(p, linear.out_features(), linear.in_features(), mask.sum().item<int64_t>(), record);
}

class Magnitude final : public Method {
 public:
  Magnitude(const MethodParams& p, const std::string& where)
      : Method("magnitude", p), pattern_(SparsityFromParams(p, where)), layer_wide_(p.String("scope") == "layer") {
    PC_CHECK(!(layer_wide_ && pattern_.nm()), where, ": scope 'layer' ranks all weights of a layer together and ",
             "cannot be combined with the N:M pattern '", p.String("pattern"),
             "'; use scope 'row' (the default) or pattern 'unstructured'");
  }
  void CompressLinear(Linear& linear, const InputStats&, Record& record) override {
    ApplyMask(linear, MagnitudeMask(linear.weight, pattern_, layer_wide_), pattern_, record);
    record.text["scope"] = layer_wide_ ? "layer" : "row";
  }
  at::Tensor NaiveWeight(const at::Tensor& w) const override { return MagnitudePruned(w, pattern_, layer_wide_); }

 private:
  SparsityPattern pattern_;
  bool layer_wide_;
};

// ‖X_j‖₂ (in,) float64 from the engine's Σ x_j², checked against the linear.
at::Tensor ColumnNorms(const Linear& linear, const InputStats& stats, const std::string& method) {
  PC_ASSERT(stats.sq_sum.defined() && stats.sq_sum.numel() == linear.in_features(), method,
            ": no input statistics for ", linear.name);
  PC_CHECK(at::isfinite(stats.sq_sum).all().item<bool>(), method, ": the calibration inputs of '", linear.name,
           "' have non-finite squared sums (activations overflow)");
  return stats.sq_sum.sqrt();
}

class Wanda : public Method {
 public:
  Wanda(const std::string& name, const MethodParams& p, const std::string& where)
      : Method(name, p), pattern_(SparsityFromParams(p, where)) {}
  uint32_t stats() const override { return kStatSqSum; }
  void CompressLinear(Linear& linear, const InputStats& stats, Record& record) override {
    at::Tensor score = Score(linear, stats, record);  // (out, in) float64
    ApplyMask(linear, RowPatternMask(score, pattern_), pattern_, record);
  }
  at::Tensor NaiveWeight(const at::Tensor& w) const override { return MagnitudePruned(w, pattern_); }

 protected:
  // |W_ij| · ‖X_j‖₂
  virtual at::Tensor Score(const Linear& linear, const InputStats& stats, Record&) const {
    return linear.weight.abs().to(at::kDouble).mul_(ColumnNorms(linear, stats, name()).unsqueeze(0));
  }
  SparsityPattern pattern_;
};

class WandaPerp final : public Wanda {
 public:
  WandaPerp(const MethodParams& p, const std::string& where)
      : Wanda("wanda-perp", p, where), lambda_par_(p.Double("lambda_par")), lambda_perp_(p.Double("lambda_perp")) {
    PC_CHECK(lambda_par_ > 0 || lambda_perp_ > 0, where,
             ": 'lambda_par' and 'lambda_perp' are both 0, which scores every weight 0; set at least one > 0");
  }
  bool WantsOutputs() const override { return true; }
  // P (in, out) += (X²)ᵀ (U²): Σ_t x_tj² u_ti² with u_t = y_t / ‖y_t‖ (u_t = 0 where y_t = 0: no
  // direction, the whole change counts as perpendicular).
  void Accumulate(const Linear& linear, const at::Tensor& x, const at::Tensor& y, InputStats& stats) const override {
    at::Tensor y2 = y * y;                           // (n, out)
    at::Tensor norm2 = y2.sum(1, /*keepdim=*/true);  // (n, 1)
    at::Tensor inv = at::where(norm2 > 0, norm2.reciprocal(), at::zeros_like(norm2));
    at::Tensor part = at::mm((x * x).t(), y2.mul_(inv)).to(at::kDouble);  // (in, out)
    at::Tensor& acc = stats.extra[Key(linear)];                           // per linear: q, k and v share one InputStats
    if (acc.defined())
      acc.add_(part);
    else
      acc = part;
  }

 protected:
  at::Tensor Score(const Linear& linear, const InputStats& stats, Record& record) const override {
    at::Tensor norms = ColumnNorms(linear, stats, name());  // (in,)
    auto it = stats.extra.find(Key(linear));
    PC_ASSERT(it != stats.extra.end(), "wanda-perp: no output statistics for ", linear.name);
    at::Tensor s = (norms * norms).unsqueeze(0);  // (1, in) Σ x_j²
    at::Tensor par = it->second.t();              // (out, in) Σ x_j² u_i²
    // λ⊥ (S − P) + λ∥ P, clamped at 0 against rounding (P <= S in exact arithmetic).
    at::Tensor energy = (par * (lambda_par_ - lambda_perp_)).add_(s * lambda_perp_).clamp_min_(0);
    at::Tensor w2 = linear.weight.to(at::kDouble).square();
    double total = (w2 * s).sum().item<double>();
    record.values["par_energy_share"] = total > 0 ? (w2 * par).sum().item<double>() / total : 0.0;
    return energy.sqrt_().mul_(w2.sqrt_());
  }

 private:
  static std::string Key(const Linear& linear) { return "wanda_perp_par:" + linear.name; }
  double lambda_par_, lambda_perp_;
};

template <typename M>
std::function<std::unique_ptr<Method>(const MethodParams&, const std::string&)> Factory() {
  return [](const MethodParams& p, const std::string& where) { return std::unique_ptr<Method>(new M(p, where)); };
}

}  // namespace

void RegisterPruning(MethodRegistry& r) {
  std::vector<ParamSpec> magnitude = SparsityParamSpecs();
  magnitude.push_back(ParamSpec::String(
      "scope", "row", "'row': floor(ratio × in) zeros in every output row; 'layer': floor(ratio × numel) in the layer",
      {"row", "layer"}));
  r.Add({"magnitude", "magnitude pruning |W| (per output row, layer-wide or N:M)", "pruning", magnitude, "random",
         /*default_propagate_compressed=*/true, Factory<Magnitude>()});
  r.Add({"wanda", "Wanda pruning |W|·‖X‖ compared within each output row (locuslab/wanda), unstructured or N:M",
         "pruning", SparsityParamSpecs(), "random", /*default_propagate_compressed=*/true,
         [](const MethodParams& p, const std::string& where) {
           return std::unique_ptr<Method>(new Wanda("wanda", p, where));
         }});
  std::vector<ParamSpec> perp = SparsityParamSpecs();
  perp.push_back(ParamSpec::Double("lambda_par", 0.1,
                                   "weight of the output change parallel to the output direction (1 with "
                                   "lambda_perp 1 is Wanda)",
                                   0, 1e6));
  perp.push_back(ParamSpec::Double("lambda_perp", 1.0, "weight of the output change perpendicular to it", 0, 1e6));
  r.Add({"wanda-perp",
         "Wanda-⊥: Wanda with the removed output energy split into parallel and perpendicular parts (weighted)",
         "pruning", perp, "random", /*default_propagate_compressed=*/true, Factory<WandaPerp>()});
}

}  // namespace pc
