// compress/awq.cc — the `awq` and `perp-awq` methods (one class, two sets of defaults).
//
// awq: llm-awq's activation-aware scale search, folding and clipping (docs/AWQ.md), then the
// shared group quantizer. perp-awq: the same search with the loss λ∥·‖e∥‖² + λ⊥·‖e⊥‖², e split
// per token against the inspected module's original output (docs/AWQ.md: λ∥ = 0.1, λ⊥ = 1).
#include <map>

#include "compress/awq_block.h"
#include "compress/method.h"
#include "compress/quant_params.h"
#include "core/error.h"

namespace pc {
namespace {

std::vector<ParamSpec> AwqParamSpecs(double lambda_par, double lambda_perp) {
  std::vector<ParamSpec> p = QuantParamSpecs();
  const std::vector<ParamSpec> more = {
      ParamSpec::Int("n_grid", 20, "scale search grid: alpha = i/n_grid for i = 0..n_grid-1 (llm-awq: 20; 1: alpha 0 only, "
                     "i.e. s = 1 as RTN)", 1, 1000),
      ParamSpec::Double("alpha", -1, "a fixed alpha in [0, 1] for every group instead of the search (-1: search)", -1, 1),
      ParamSpec::String("grid", "llm-awq",
                        "the alphas tried: llm-awq (i/n_grid, i = 0..n_grid-1) or llm-compressor (AWQModifier: with "
                        "duo scaling s = 1 first, then the duo form at i/(n_grid-2), i = 0..n_grid-2; without, "
                        "i/(n_grid-1), i = 0..n_grid-1)",
                        {"llm-awq", "llm-compressor"}),
      ParamSpec::Bool("duo_scaling", false, "AutoAWQ's s = x_mean^a / (w_mean^(1-a) + 1e-4) instead of llm-awq's x_mean^a"),
      ParamSpec::Bool("clip", true, "search and apply llm-awq's per-(row, group) weight clipping after scaling"),
      ParamSpec::Int("clip_tokens", 512, "clipping: every max(1, tokens / clip_tokens)-th calibration token is used", 1,
                     1LL << 40),
      ParamSpec::Int("clip_steps", 10, "clipping: shrink steps max|w| * (1 - i/20), i = 0..clip_steps-1 (10: 1.00 .. 0.55)",
                     1, 20),
      ParamSpec::Bool("clip_fused_v", false, "also clip the v rows of a fused q/k/v linear (llm-awq skips the whole layer)"),
      ParamSpec::Double("lambda_par", lambda_par, "loss weight of the error component parallel to the original output",
                        0, 1e6),
      ParamSpec::Double("lambda_perp", lambda_perp,
                        "loss weight of the error component perpendicular to the original output", 0, 1e6),
      ParamSpec::String("scale_dtype", "f32",
                        "group scales of the quantizer: f32 (the shared quantizer, as rtn) or f16 (rounded to float16 as "
                        "AutoAWQ keeps them; --format awq-gemm then reproduces the weights bit for bit)",
                        {"f32", "f16"}),
      ParamSpec::Bool("quantize", true, "false: search, fold and clip but leave the weights unquantized (tests of the folding)"),
  };
  p.insert(p.end(), more.begin(), more.end());
  return p;
}

class Awq final : public Method {
 public:
  Awq(const std::string& name, const MethodParams& p, const std::string& where) : Method(name, p) {
    awq::SearchOptions& s = options_.search;
    s.spec = QuantSpecFromParams(p, where);
    s.f16_scales = p.String("scale_dtype") == "f16";
    s.n_grid = static_cast<int>(p.Int("n_grid"));
    s.fixed_alpha = p.Double("alpha");
    PC_CHECK(s.fixed_alpha == -1 || s.fixed_alpha >= 0, where, ": 'alpha' must be -1 (search) or lie in 0..1, got ",
             s.fixed_alpha);
    s.duo = p.Bool("duo_scaling");
    s.grid = p.String("grid") == "llm-compressor" ? awq::SearchOptions::Grid::kLlmCompressor
                                                   : awq::SearchOptions::Grid::kLlmAwq;
    PC_CHECK(s.grid == awq::SearchOptions::Grid::kLlmAwq || s.n_grid >= (s.duo ? 3 : 2), where,
             ": grid 'llm-compressor' needs n_grid >= ", s.duo ? 3 : 2, ", got ", s.n_grid);
    s.lambda_par = p.Double("lambda_par");
    s.lambda_perp = p.Double("lambda_perp");
    PC_CHECK(s.lambda_par > 0 || s.lambda_perp > 0, where, ": 'lambda_par' and 'lambda_perp' are both 0 (no loss to ",
             "minimize)");
    options_.clip = p.Bool("clip");
    options_.clip_tokens = p.Int("clip_tokens");
    options_.clip_steps = static_cast<int>(p.Int("clip_steps"));
    options_.clip_fused_v = p.Bool("clip_fused_v");
    quantize_ = p.Bool("quantize");
  }

  bool AddsActivationScales() const override { return true; }

  bool TransformsBlock() const override { return true; }
  void TransformBlock(BlockScope& scope) override {
    out_scales_.clear();  // the previous block's linears are all compressed and logged
    awq::TransformAwqBlock(scope, options_, name(), &notes_);
    for (const auto& [linear, note] : notes_) {
      if (note.in_scale.defined()) folded_.input[linear] = note.in_scale;
      if (note.out_scale.defined()) folded_.output[linear] = note.out_scale;
    }
  }

  void TakeFoldedScales(FoldedScales& into) override {
    for (auto& [n, t] : folded_.input) into.input[n] = t;
    for (auto& [n, t] : folded_.output) into.output[n] = t;
    folded_ = FoldedScales();
  }

  at::Tensor OutputScale(const Linear& linear) const override {
    auto it = out_scales_.find(linear.name);
    return it == out_scales_.end() ? at::Tensor() : it->second;
  }

  void CompressLinear(Linear& linear, const InputStats&, Record& record) override {
    const QuantSpec& spec = options_.search.spec;
    if (quantize_) linear.weight.copy_(awq::QuantizeWeight(linear.weight, spec, options_.search.f16_scales));
    record.values["bits"] = spec.bits;
    auto it = notes_.find(linear.name);
    if (it == notes_.end()) return;
    const awq::LinearNote& note = it->second;
    if (note.out_scale.defined()) out_scales_[linear.name] = note.out_scale;
    if (note.alpha >= 0) {
      record.values["alpha"] = note.alpha;
      record.text["awq_group"] = note.group;
    }
    if (note.clip_step.defined()) {
      awq::ClipSummary cs = awq::SummarizeClip({note.clip_step}, options_.clip_steps);
      record.values["clip_mean"] = cs.mean_factor;
      record.values["clip_fraction"] = cs.fraction_clipped;
      record.arrays["clip_hist"] = cs.histogram;
    }
    notes_.erase(it);
  }

  at::Tensor NaiveWeight(const at::Tensor& w) const override {
    return awq::QuantizeWeight(w, options_.search.spec, options_.search.f16_scales);
  }

 private:
  awq::BlockOptions options_;
  bool quantize_ = true;
  std::map<std::string, awq::LinearNote> notes_;  // per linear, from TransformBlock to CompressLinear
  std::map<std::string, at::Tensor> out_scales_;   // this block's linears whose output rows absorbed 1/s
  FoldedScales folded_;                            // this block's folded scales, until the engine takes them
};

MethodInfo AwqInfo(const std::string& name, const std::string& summary, double lambda_par, double lambda_perp) {
  return {name, summary, "quantization", AwqParamSpecs(lambda_par, lambda_perp), "awq",
          /*default_propagate_compressed=*/false, [name](const MethodParams& p, const std::string& where) {
            return std::unique_ptr<Method>(new Awq(name, p, where));
          }};
}

}  // namespace

void RegisterAwq(MethodRegistry& r) {
  r.Add(AwqInfo("awq", "activation-aware weight quantization (llm-awq: scale search, folding, clipping)", 1.0, 1.0));
  r.Add(AwqInfo("perp-awq",
                "AWQ whose scale search weighs the error parallel / perpendicular to the output (lambda_par, "
                "lambda_perp)",
                0.1, 1.0));
}

}  // namespace pc
