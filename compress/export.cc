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

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "compress/awq_pack.h"
#include "compress/quant_params.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/strings.h"
#include "model/gguf_export.h"
#include "model/gguf_writer.h"

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
    // Quantizers, and joint pruning + quantization (SparseGPT with bits): its pruned weights are
    // code z, on the grid like any other value. Pruning alone (bits absent or 0) has no grid.
    if (!m.params().Has("bits") || m.params().Int("bits") == 0) {
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
// Undoes the fake-quantized folder's fold of the activation scales (pipeline/compress_run.cc):
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

// ---- GGUF --------------------------------------------------------------------------------------

namespace pc {
namespace {

struct GgufLinear {
  QuantSpec spec;
  GgmlType type;
};

// The quantized linears (block linears and an untied head) and their block types; refusals by name.
std::map<std::string, GgufLinear> ResolveGguf(const Model& model, const Plan& plan) {
  CheckGgufWritable(model);
  std::map<std::string, GgufLinear> out;
  std::vector<std::string> refused;
  PC_CHECK(!(plan.AddsActivationScales() && *model.arch().act_scales != '\0'), "--format gguf: the recipe adds AWQ ",
           "activation scales (", model.config().model_type, " scales act(x) before the down projection), which ",
           "llama.cpp's ", model.arch().gguf_arch, " has no tensor for: use --format hf");
  std::vector<const PlanEntry*> entries;
  for (const PlanEntry& e : plan.entries) entries.push_back(&e);
  if (plan.head.method >= 0) {
    PC_CHECK(!model.config().tie_embeddings, "--format gguf: the recipe compresses the tied output head '",
             plan.head.name, "', which GGUF stores as the token embedding: leave the head alone");
    entries.push_back(&plan.head);
  }
  for (const PlanEntry* e : entries) {
    if (e->method < 0) continue;
    const Method& m = *plan.methods[e->method];
    if (!m.params().Has("bits") || m.params().Int("bits") == 0) continue;  // pruned only: F16/F32
    QuantSpec spec = QuantSpecFromParams(m.params(), "--format gguf: " + e->name);
    GgufLinear g{spec, GgmlType::kF32};
    if (spec.bits == 4) {
      g.type = spec.zero_point ? GgmlType::kQ4_1 : GgmlType::kQ4_0;
    } else if (spec.bits == 8 && !spec.zero_point) {
      g.type = GgmlType::kQ8_0;
    } else {
      refused.push_back(Str(e->name, " (", m.name(), " ", spec.Describe(), ": ",
                            spec.bits == 8 ? "Q8_0 has no zero point" : "no llama.cpp block type of this width", ")"));
      continue;
    }
    if (spec.group_size > 0 && spec.group_size % 32 != 0) {
      refused.push_back(Str(e->name, " (group_size ", spec.group_size, " is not a multiple of ", GgmlTypeName(g.type),
                            "'s block of 32)"));
      continue;
    }
    out[e->name] = g;
  }
  for (const auto& e : model.TensorEntries(SaveOptions{})) {
    if (!EndsWith(e.name, ".weight")) continue;
    const std::string module = e.name.substr(0, e.name.size() - 7);
    auto it = out.find(module);
    if (it == out.end()) continue;
    const int64_t in = model.arch().conv1d && module != model.arch().lm_head.hf ? e.shape[0] : e.shape[1];
    const int64_t g = it->second.spec.GroupLength(in);
    if (in % 32 != 0 || g % 32 != 0) {
      refused.push_back(Str(module, " (in_features ", in, ", group ", g, ": not a multiple of ",
                            GgmlTypeName(it->second.type), "'s block of 32)"));
    }
  }
  PC_CHECK(refused.empty(), "--format gguf cannot represent these linears in a llama.cpp block type: ",
           ListNames(refused), "; quantize them with bits=4 (Q4_0/Q4_1) or bits=8 symmetric (Q8_0) and group_size a ",
           "multiple of 32, or leave them out of the recipe (they are then written as F16/F32)");
  return out;
}

// Grid of a symmetric block: values c·s with integer c in [−2^(b−1), 2^(b−1) − 1]. Any such s has
// the block's largest magnitude = k·s for an integer k ≤ 2^(b−1); the candidates are tried with
// the quantizers' k first (RTN: 2^(b−1) − 1, GPTQ: 2^(b−1)), then downwards, and a block is accepted
// where every value lies within `tol` code units of its code.
struct SymBlocks {
  at::Tensor codes;  // (blocks, 32) int32
  at::Tensor scale;  // (blocks,) float32
  int64_t bad = 0, first_bad = -1;
};

SymBlocks RecoverSymmetricBlocks(const at::Tensor& w, int bits, double tol) {
  const at::Tensor b = w.reshape({-1, 32}).to(at::kDouble);  // (blocks, 32)
  const int64_t n = b.size(0);
  const int64_t hi = (int64_t{1} << (bits - 1)) - 1, lo = -(int64_t{1} << (bits - 1));
  const at::Tensor amax = b.abs().amax(1);  // (blocks,)
  SymBlocks out;
  out.codes = at::zeros({n, 32}, at::kInt);
  out.scale = at::zeros({n}, at::kFloat);
  at::Tensor todo = at::nonzero(amax > 0).flatten();  // zero blocks: d = 0, codes 0
  std::vector<int64_t> ks = {hi, -lo};
  for (int64_t k = -lo; k >= 1; --k) {
    if (k != hi && k != -lo) ks.push_back(k);
  }
  for (int64_t k : ks) {
    if (todo.numel() == 0) break;
    const at::Tensor vals = b.index_select(0, todo);
    const at::Tensor s = amax.index_select(0, todo) / static_cast<double>(k);  // (todo,)
    const at::Tensor r = vals / s.unsqueeze(1);
    const at::Tensor q = r.round();
    const at::Tensor ok = ((r - q).abs() <= tol).all(1) & (q >= lo).all(1) & (q <= hi).all(1);
    const at::Tensor hit = at::nonzero(ok).flatten();
    if (hit.numel() > 0) {
      const at::Tensor rows = todo.index_select(0, hit);
      out.codes.index_copy_(0, rows, q.index_select(0, hit).to(at::kInt));
      out.scale.index_copy_(0, rows, s.index_select(0, hit).to(at::kFloat));
    }
    todo = todo.index_select(0, at::nonzero(ok.logical_not()).flatten());
  }
  out.bad = todo.numel();
  if (out.bad > 0) out.first_bad = todo[0].item<int64_t>();
  return out;
}

double StoredRoundoff(at::ScalarType t) {
  return t == at::kHalf ? std::ldexp(1.0, -11) : t == at::kBFloat16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -24);
}

std::vector<uint16_t> Halves(const at::Tensor& x) {  // float32 -> fp16 bits
  const at::Tensor h = x.to(at::kFloat).contiguous().to(at::kHalf);
  std::vector<uint16_t> v(static_cast<size_t>(h.numel()));
  std::memcpy(v.data(), h.data_ptr(), v.size() * 2);
  return v;
}

struct GgufStats {
  int64_t blocks = 0;
  double max_abs_diff = 0;  // max |llama.cpp's dequantized value − fake-quantized weight|
};

// The bytes of one quantized linear (out, in) float32 in GGUF row order.
std::string EncodeGgufLinear(const std::string& name, const at::Tensor& w, const GgufLinear& g, at::ScalarType stored,
                             GgufStats& stats) {
  const int64_t blocks = w.numel() / 32;
  const GgmlTypeInfo& info = GgmlInfo(g.type);
  std::string bytes(static_cast<size_t>(blocks * info.type_size), '\0');
  auto* dst = reinterpret_cast<uint8_t*>(&bytes[0]);
  at::Tensor deq;  // what llama.cpp reads back, (blocks, 32) float32
  if (g.type == GgmlType::kQ4_1) {
    const double tol = 1e-3 + 2.0 * 15.0 * StoredRoundoff(stored);
    awq::GridCodes c = awq::RecoverGridCodes(w.reshape({blocks, 32}), 4, 32, tol);
    PC_CHECK(c.bad_groups == 0, "--format gguf: '", name, "' is not on a 4-bit grid in ", c.bad_groups, " of ", blocks,
             " blocks of 32 (first: block ", c.first_bad_row, "); its weights were not quantized with ",
             g.spec.Describe());
    const at::Tensor d = c.scales.flatten(), m = (-c.zeros.flatten().to(at::kFloat) * d);
    const std::vector<uint16_t> d16 = Halves(d), m16 = Halves(m);
    const at::Tensor q = c.codes.to(at::kByte).contiguous();
    EncodeQ4_1(q.data_ptr<uint8_t>(), d16.data(), m16.data(), blocks, dst);
    deq = c.codes.to(at::kFloat) * d.to(at::kHalf).to(at::kFloat).unsqueeze(1) + m.to(at::kHalf).to(at::kFloat).unsqueeze(1);
  } else {
    const int bits = g.type == GgmlType::kQ8_0 ? 8 : 4;
    const double tol = 1e-3 + 2.0 * std::ldexp(1.0, bits - 1) * StoredRoundoff(stored);
    SymBlocks s = RecoverSymmetricBlocks(w, bits, tol);
    PC_CHECK(s.bad == 0, "--format gguf: '", name, "' is not on a symmetric ", bits, "-bit grid in ", s.bad, " of ",
             blocks, " blocks of 32 (first: block ", s.first_bad, "); its weights were not quantized with ",
             g.spec.Describe());
    const std::vector<uint16_t> d16 = Halves(s.scale);
    if (bits == 4) {
      const at::Tensor q = (s.codes + 8).to(at::kByte).contiguous();
      EncodeQ4_0(q.data_ptr<uint8_t>(), d16.data(), blocks, dst);
    } else {
      const at::Tensor q = s.codes.to(at::kChar).contiguous();
      EncodeQ8_0(q.data_ptr<int8_t>(), d16.data(), blocks, dst);
    }
    deq = s.codes.to(at::kFloat) * s.scale.to(at::kHalf).to(at::kFloat).unsqueeze(1);
  }
  const double diff = (deq - w.reshape({blocks, 32})).abs().max().item<double>();
  PC_CHECK(std::isfinite(diff), "--format gguf: '", name, "' has a scale beyond the float16 range");
  stats.blocks += blocks;
  stats.max_abs_diff = std::max(stats.max_abs_diff, diff);
  return bytes;
}

}  // namespace

void CheckGguf(const Model& model, const Plan& plan) { ResolveGguf(model, plan); }

void ExportGguf(Model& model, const Plan& plan, const std::string& path, GgmlType other) {
  const std::map<std::string, GgufLinear> linears = ResolveGguf(model, plan);
  GgufLinearCodec codec;
  for (const auto& [name, g] : linears) codec.types[name] = g.type;
  GgufStats stats;
  const at::ScalarType stored = model.dtype();
  codec.encode = [&](const std::string& module, const at::Tensor& w) {
    return EncodeGgufLinear(module, w, linears.at(module), stored, stats);
  };
  GgufWriteOptions o;
  o.outtype = other;
  o.codec = &codec;
  WriteGguf(model, path, o);
  log::Info("export", "gguf: ", linears.size(), " quantized linears in llama.cpp block types (", stats.blocks,
            " blocks of 32); max |dequantized - fake-quantized weight| ", FormatDouble(stats.max_abs_diff, 3),
            " (float16 d and m)");
}

}  // namespace pc
