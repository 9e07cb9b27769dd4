// compress/export.cc — AutoAWQ's GEMM layout (awq/modules/linear/gemm.py WQLinear_GEMM):
//   <module>.qweight  int32 (in, out/8)     codes, 8 output columns per word, nibble order 0,2,4,6,1,3,5,7
//   <module>.qzeros   int32 (in/g, out/8)   zero points, packed the same way
//   <module>.scales   fp16  (in/g, out)
//   <module>.bias     fp16  (out,)          when the linear has one
// replacing <module>.weight; every other tensor is copied as it is. AWQ activation scales are
// AutoAWQ's <...>.act.scales (ScaledActivation): the fake-quantized Hugging Face folder folded
// them into the next linear's input columns (model/folded_scales.h), so they are put back first
// (s into act.scales, ·s on those columns). config.json gains quantization_config. The integer codes are recovered
// from the fake-quantized weights (compress/awq_pack.h) and must lie on a 4-bit grid exactly.
#include "compress/export.h"

#include <filesystem>
#include <map>
#include <set>

#include "compress/awq_pack.h"
#include "compress/quant_params.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/strings.h"

namespace pc {
namespace {

std::string ListNames(const std::vector<std::string>& names) {
  const size_t shown = 12;
  std::vector<std::string> head(names.begin(), names.begin() + std::min(shown, names.size()));
  std::string s = Join(head, ", ");
  if (names.size() > shown) s += Str(" and ", names.size() - shown, " more");
  return s;
}

// Unit roundoff of the dtype the fake-quantized weights were stored in: how far a stored grid
// value may lie from its exact (q − z)·s.
double UnitRoundoff(StDType t) {
  switch (t) {
    case StDType::kF16: return std::ldexp(1.0, -11);
    case StDType::kBF16: return std::ldexp(1.0, -8);
    default: return std::ldexp(1.0, -24);
  }
}

struct Packed {
  at::Tensor qweight, qzeros, scales;
  double max_abs_diff = 0;  // max |(q − z)·fp16(s) − w|
  int64_t groups = 0, exact_groups = 0;
};

Packed PackLinear(const Linear& lin, const QuantSpec& spec, StDType stored) {
  const int64_t g = spec.GroupLength(lin.in_features());
  const double tol = 1e-3 + 2.0 * 15.0 * UnitRoundoff(stored);
  awq::GridCodes c = awq::RecoverGridCodes(lin.weight, 4, g, tol);
  PC_CHECK(c.bad_groups == 0, "--format awq-gemm: '", lin.name, "' is not on a 4-bit grid in ", c.bad_groups, " of ",
           c.groups, " groups (first: row ", c.first_bad_row, ", group ", c.first_bad_group,
           "); its weights were not quantized with bits=4, group_size=", spec.group_size);
  Packed p;
  at::Tensor s16 = c.scales.to(at::kHalf);  // (out, groups)
  PC_CHECK(at::isfinite(s16).all().item<bool>(), "--format awq-gemm: '", lin.name,
           "' has a group scale beyond the float16 range (", c.scales.max().item<double>(), ")");
  at::Tensor col = at::arange(lin.in_features(), at::kLong).div(g, "floor");
  at::Tensor deq = (c.codes - c.zeros.index_select(1, col)).to(at::kFloat) * s16.to(at::kFloat).index_select(1, col);
  p.max_abs_diff = (deq - lin.weight.to(at::kFloat)).abs().max().item<double>();
  p.qweight = awq::PackAwqOrder(c.codes.t().contiguous());  // (in, out/8)
  p.qzeros = awq::PackAwqOrder(c.zeros.t().contiguous());   // (groups, out/8)
  p.scales = s16.t().contiguous();                          // (groups, out)
  p.groups = c.groups;
  p.exact_groups = c.exact_f16_groups;
  return p;
}

// Every regular file of `src` but the weights, config.json and the compression log (tokenizer files).
void CopyOtherFiles(const std::string& src, const std::string& dst) {
  if (src.empty()) return;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(src, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const std::string name = it->path().filename().string();
    if (EndsWith(name, ".safetensors") || name == "model.safetensors.index.json" || name == "config.json" ||
        name == "compress.h5") {
      continue;
    }
    fs::WriteFileAtomic(fs::Join(dst, name), fs::ReadFile(it->path().string()));
  }
  PC_CHECK(!ec, "--format awq-gemm: cannot list '", src, "': ", ec.message());
}

}  // namespace

namespace {

struct ExportPlan {
  std::map<std::string, QuantSpec> quantized;  // module -> quantizer
  std::vector<std::string> skipped;             // block linears left alone (modules_to_not_convert)
  int64_t group_size = 0;
};

// The checks of CheckAwqGemm; shapes come from the tensor declarations (nothing is loaded).
ExportPlan Resolve(const Model& model, const Plan& plan) {
  ExportPlan out;
  std::vector<std::string> not_quantizer, not_4bit, bad_shape;
  std::set<int64_t> group_sizes;
  PC_CHECK(plan.head.method < 0, "--format awq-gemm packs block linears (AutoAWQ leaves the output head dense), but "
           "the recipe compresses the output head '", plan.head.name, "': use --format hf, or leave the head alone");
  for (const PlanEntry& e : plan.entries) {
    if (e.method < 0) {
      out.skipped.push_back(e.name);
      continue;
    }
    const Method& m = *plan.methods[e.method];
    if (plan.infos[e.method]->family != "quantization" || !m.params().Has("bits")) {
      not_quantizer.push_back(e.name + " (" + m.name() + ")");
      continue;
    }
    QuantSpec spec = QuantSpecFromParams(m.params(), "--format awq-gemm: " + e.name);
    if (spec.bits != 4) {
      not_4bit.push_back(Str(e.name, " (", m.name(), " bits=", spec.bits, ")"));
      continue;
    }
    out.quantized[e.name] = spec;
    group_sizes.insert(spec.group_size);
  }
  PC_CHECK(not_quantizer.empty(), "--format awq-gemm packs quantized weights only; these linears are not quantized: ",
           ListNames(not_quantizer));
  PC_CHECK(not_4bit.empty(), "--format awq-gemm: AutoAWQ's GEMM layout holds 4-bit weights; these linears have other ",
           "widths: ", ListNames(not_4bit));
  PC_CHECK(!out.quantized.empty(), "--format awq-gemm: the recipe quantizes no linear");
  std::vector<std::string> sizes;
  for (int64_t g : group_sizes) sizes.push_back(std::to_string(g));
  PC_CHECK(sizes.size() == 1, "--format awq-gemm: quantization_config has one group_size, the recipe uses ",
           sizes.size(), " (", Join(sizes, ", "), ")");
  out.group_size = *group_sizes.begin();
  for (const auto& e : model.TensorEntries(SaveOptions{})) {
    if (!EndsWith(e.name, ".weight") || !out.quantized.count(e.name.substr(0, e.name.size() - 7))) continue;
    int64_t rows = e.shape[0], cols = e.shape[1];
    if (model.arch().conv1d) std::swap(rows, cols);  // declared in the on-disk (in, out) layout
    const std::string module = e.name.substr(0, e.name.size() - 7);
    if (out.group_size > 0 && cols % out.group_size != 0) {
      bad_shape.push_back(Str(module, " (in_features ", cols, " is not a multiple of group_size ", out.group_size, ")"));
    }
    if (rows % 8 != 0) bad_shape.push_back(Str(module, " (out_features ", rows, " is not a multiple of 8)"));
  }
  PC_CHECK(bad_shape.empty(), "--format awq-gemm cannot represent these linears: ", ListNames(bad_shape));
  return out;
}

}  // namespace

void CheckAwqGemm(const Model& model, const Plan& plan) { Resolve(model, plan); }

namespace {
// Undoes the fake-quantized folder's fold of the activation scales (recipes/compress_run.cc):
// act_scales = s and W[:, j] ·= s_j on every linear that reads act(x)/s.
void RestoreActivationScales(Model& model) {
  const FoldedScales folded = ReadFoldedScales(model.source_dir());
  if (folded.activation.empty()) return;
  for (int l = 0; l < model.num_layers(); ++l) {
    model.LoadBlock(l);  // the scales stay in memory for the export below
    Block& b = model.block(l);
    auto it = folded.activation.find(b.act_scales_name);
    if (it == folded.activation.end()) continue;
    const at::Tensor& s = it->second;  // (intermediate,) float32
    for (const ScaleGroupSpec& g : model.arch().awq_groups) {
      if (g.prev != PrevKind::kActivation) continue;
      for (Role r : g.members) {
        Linear* lin = b.Find(r);
        if (lin == nullptr) continue;
        PC_CHECK(lin->in_features() == s.numel(), "'", model.source_dir(), "/", kFoldedScalesDir, "': '", it->first,
                 "' has ", s.numel(), " entries, '", lin->name, "' ", lin->in_features(), " inputs");
        lin->weight = (lin->weight.to(at::kFloat) * s.unsqueeze(0)).to(lin->weight.scalar_type());
      }
    }
    b.act_scales = s.to(model.dtype());
  }
}
}  // namespace

void ExportAwqGemm(Model& model, const Plan& plan, const std::string& dir) {
  RestoreActivationScales(model);
  const ExportPlan ep = Resolve(model, plan);
  const std::map<std::string, QuantSpec>& quantized = ep.quantized;
  const std::vector<std::string>& skipped = ep.skipped;
  const int64_t group_size = ep.group_size;
  if (model.arch().conv1d) {
    log::Warn("export", "awq-gemm: ", model.config().model_type, " stores Conv1D modules; the folder uses the GEMM ",
              "layout of their (out, in) weights, which AutoAWQ and transformers do not load for this architecture");
  }

  // Declarations: the quantized weights become qweight/qzeros/scales (and an fp16 bias).
  std::vector<SafetensorsWriter::Entry> entries;
  std::map<std::string, StDType> stored;  // weight tensor -> on-disk dtype of the fake-quantized values
  for (const auto& e : model.TensorEntries(SaveOptions{})) {
    const bool is_weight = EndsWith(e.name, ".weight"), is_bias = EndsWith(e.name, ".bias");
    const std::string module = e.name.substr(0, e.name.rfind('.'));
    auto q = quantized.find(module);
    if (q == quantized.end() || !(is_weight || is_bias)) {
      entries.push_back(e);
      continue;
    }
    if (is_bias) {
      entries.push_back({e.name, StDType::kF16, e.shape});
      continue;
    }
    stored[e.name] = e.dtype;
    int64_t out = e.shape[0], in = e.shape[1];
    if (model.arch().conv1d) std::swap(out, in);  // declared in the on-disk (in, out) layout
    const int64_t groups = in / q->second.GroupLength(in);
    entries.push_back({module + ".qweight", StDType::kI32, {in, out / 8}});
    entries.push_back({module + ".qzeros", StDType::kI32, {groups, out / 8}});
    entries.push_back({module + ".scales", StDType::kF16, {groups, out}});
  }

  fs::StagedDir staged(dir, /*overwrite=*/false, "awq-gemm folder");
  SafetensorsWriter writer(staged.path(), entries, kDefaultMaxShardBytes);
  model.ForEachTopTensor([&](const std::string& n, const at::Tensor& t, StDType) { writer.Write(n, t); });
  int64_t groups = 0, exact = 0;
  double max_diff = 0;
  for (int l = 0; l < model.num_layers(); ++l) {
    const bool was_loaded = model.block(l).loaded;
    if (!was_loaded) model.LoadBlock(l);
    std::map<std::string, const Linear*> by_weight;
    for (const Linear& lin : model.block(l).linears) by_weight[lin.name + ".weight"] = &lin;
    model.ForEachBlockTensor(l, [&](const std::string& n, const at::Tensor& t, StDType) {
      auto lin = by_weight.find(n);
      if (lin == by_weight.end() || !quantized.count(lin->second->name)) {
        writer.Write(n, t);  // norms, biases (converted to their declared dtype), other linears, act scales
        return;
      }
      const Linear& L = *lin->second;
      Packed p = PackLinear(L, quantized.at(L.name), stored.at(n));
      writer.Write(L.name + ".qweight", p.qweight);
      writer.Write(L.name + ".qzeros", p.qzeros);
      writer.Write(L.name + ".scales", p.scales);
      groups += p.groups;
      exact += p.exact_groups;
      max_diff = std::max(max_diff, p.max_abs_diff);
    });
    if (!was_loaded) model.UnloadBlock(l);
  }
  writer.Finish();

  nlohmann::json config = model.ConfigJson(SaveOptions{});
  nlohmann::json qc = {{"quant_method", "awq"}, {"zero_point", true}, {"group_size", group_size}, {"bits", 4},
                       {"version", "gemm"}};
  qc["modules_to_not_convert"] = skipped.empty() ? nlohmann::json(nullptr) : nlohmann::json(skipped);
  config["quantization_config"] = qc;
  fs::WriteFileAtomic(fs::Join(staged.path(), "config.json"), config.dump(2) + "\n");
  CopyOtherFiles(model.source_dir(), staged.path());
  staged.Commit();
  log::Info("export", "awq-gemm: ", quantized.size(), " linears packed into ", dir, "; codes exact in every group; ",
            exact, " of ", groups, " groups reproduce the weights bit for bit with float16 scales",
            exact == groups ? "" : " (scale_dtype: f16 makes all of them)", "; max |dequantized - weight| ",
            FormatDouble(max_diff, 3));
}

}  // namespace pc
