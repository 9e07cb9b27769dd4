#include "metrics/model_compare.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <sstream>
#include <utility>

#include "core/error.h"
#include "core/tensor_util.h"

namespace pc {
namespace {

// (field name, printed value) for every config field the forward depends on.
std::vector<std::pair<std::string, std::string>> ForwardFields(const ModelConfig& c) {
  auto s = [](auto v) {
    std::ostringstream os;
    os << v;
    return os.str();
  };
  std::string window_layers;  // layer_types: 1 sliding, 0 full
  for (uint8_t w : c.window_layers) window_layers += w ? '1' : '0';
  return {{"model_type", c.model_type},
          {"vocab_size", s(c.vocab_size)},
          {"hidden", s(c.hidden)},
          {"layers", s(c.layers)},
          {"heads", s(c.heads)},
          {"kv_heads", s(c.kv_heads)},
          {"head_dim", s(c.head_dim)},
          {"intermediate", s(c.intermediate)},
          {"embed_dim", s(c.embed_dim)},
          {"max_pos", s(c.max_pos)},
          {"rotary_dim", s(c.rotary_dim)},
          {"norm_eps", s(c.norm_eps)},
          {"rope_theta", s(c.rope_theta)},
          {"rope_type", RopeTypeName(c.rope.type)},
          {"rope_factor", s(c.rope.factor)},
          {"rope_original_max_pos", s(c.rope.original_max_pos)},
          {"rope_attention_factor", s(c.rope.attention_factor)},
          {"act", ActName(c.act)},
          {"tie_embeddings", s(c.tie_embeddings)},
          {"parallel_residual", s(c.parallel_residual)},
          {"pre_norm", s(c.pre_norm)},
          {"has_final_norm", s(c.has_final_norm)},
          {"scale_attn_weights", s(c.scale_attn_weights)},
          {"scale_attn_by_layer", s(c.scale_attn_by_layer)},
          {"sliding_window", s(c.sliding_window)},
          {"max_window_layers", s(c.max_window_layers)},
          {"window_layers", window_layers},
          {"parallel_scale", s(c.parallel_scale)}};
}

struct TensorShape {
  std::string name;
  std::vector<int64_t> shape;
};

// Every tensor's name and on-disk shape, in the checkpoint order, from the loaded blocks and the
// checkpoint headers (nothing is loaded).
std::vector<TensorShape> Tensors(const Model& m, const std::set<std::string>& skip) {
  std::vector<TensorShape> out;
  for (const SafetensorsWriter::Entry& e : m.TensorEntries(SaveOptions())) {
    if (!skip.count(e.name)) out.push_back({e.name, e.shape});
  }
  return out;
}

// Elements of a linear compared at once: its float64 copies (the carried reference, the difference)
// stay near 64 MiB each. A linear up to this size is compared whole.
constexpr int64_t kComparePieceElements = 8LL << 20;

double Sparsity(const at::Tensor& w) {
  return w.numel() == 0 ? 0.0 : static_cast<double>(w.eq(0).sum().item<int64_t>()) / static_cast<double>(w.numel());
}

WeightError Compare(const Linear& r, const Linear& c, int layer, const std::string& role, const FoldedScales& folded) {
  WeightError e;
  e.name = r.name;
  e.layer = layer;
  e.role = role;
  e.numel = r.weight.numel();
  double ref_norm = 0, diff = 0;
  const int64_t out = r.weight.size(0), rows = std::max<int64_t>(1, kComparePieceElements / std::max<int64_t>(1, r.weight.size(1)));
  if (rows >= out) {
    at::Tensor w = folded.Carry(r.name, r.weight);  // (out, in) float64
    ref_norm = w.norm().item<double>();
    diff = (c.weight.to(at::kDouble) - w).norm().item<double>();
  } else {
    // A large linear (the head) by pieces of rows, so that its float64 copies stay small:
    // ‖·‖_F = sqrt(Σ over pieces of ‖piece‖_F²).
    double ref_sq = 0, diff_sq = 0;
    for (int64_t r0 = 0; r0 < out; r0 += rows) {
      const int64_t n = std::min(rows, out - r0);
      FoldedScales piece;  // the fold restricted to these rows
      if (const at::Tensor* s = folded.Input(r.name)) piece.input[r.name] = *s;
      if (const at::Tensor* s = folded.Output(r.name)) {
        PC_CHECK(s->numel() == out, "folded scales: '", r.name, ".output' has ", s->numel(), " entries for ", out,
                 " output rows");
        piece.output[r.name] = s->narrow(0, r0, n);
      }
      at::Tensor w = piece.Carry(r.name, r.weight.narrow(0, r0, n));  // (n, in) float64
      ref_sq += std::pow(w.norm().item<double>(), 2);
      diff_sq += std::pow((c.weight.narrow(0, r0, n).to(at::kDouble) - w).norm().item<double>(), 2);
    }
    ref_norm = std::sqrt(ref_sq);
    diff = std::sqrt(diff_sq);
  }
  e.rel_fro = ref_norm > 0 ? diff / ref_norm : std::numeric_limits<double>::quiet_NaN();
  e.sparsity = Sparsity(c.weight);
  e.ref_sparsity = Sparsity(r.weight);
  return e;
}

}  // namespace

void CheckSameConfig(const ModelConfig& ref, const ModelConfig& comp, const std::string& ref_name,
                     const std::string& comp_name) {
  auto rf = ForwardFields(ref), cf = ForwardFields(comp);
  for (size_t i = 0; i < rf.size(); ++i) {
    PC_CHECK(rf[i].second == cf[i].second, ref_name, " and ", comp_name, " differ in architecture: config field '",
             rf[i].first, "' is ", rf[i].second, " vs ", cf[i].second);
  }
}

void CheckSameArchitecture(Model& ref, Model& comp, const std::string& ref_name, const std::string& comp_name) {
  CheckSameConfig(ref.config(), comp.config(), ref_name, comp_name);
  std::set<std::string> skip;
  if (*ref.arch().act_scales) {
    for (int l = 0; l < ref.num_layers(); ++l) skip.insert(ExpandName(ref.arch().act_scales, l));
  }
  std::vector<TensorShape> rt = Tensors(ref, skip), ct = Tensors(comp, skip);
  const std::string both = ref_name + " and " + comp_name + " differ: tensor '";
  for (size_t i = 0; i < std::max(rt.size(), ct.size()); ++i) {
    PC_CHECK(i < rt.size(), both, ct[i].name, "' is only in ", comp_name);
    PC_CHECK(i < ct.size(), both, rt[i].name, "' is only in ", ref_name);
    if (rt[i].name != ct[i].name) {
      bool in_comp = false;
      for (const auto& t : ct) in_comp = in_comp || t.name == rt[i].name;
      if (!in_comp) PC_THROW(both, rt[i].name, "' is only in ", ref_name);
      PC_THROW(both, ct[i].name, "' is only in ", comp_name, " (or the tensors are in another order)");
    }
    PC_CHECK(rt[i].shape == ct[i].shape, both, rt[i].name, "' has shape ", ShapeString(rt[i].shape), " vs ",
             ShapeString(ct[i].shape));
  }
}

std::vector<WeightError> CompareBlockWeights(Model& ref, Model& comp, int layer, const FoldedScales& folded) {
  const Block& rb = ref.block(layer);
  const Block& cb = comp.block(layer);
  PC_ASSERT(rb.loaded && cb.loaded, "layer ", layer, ": weights compared with a block not loaded");
  PC_ASSERT(rb.linears.size() == cb.linears.size(), "layer ", layer, ": linears differ");
  std::vector<WeightError> out;
  for (size_t i = 0; i < rb.linears.size(); ++i) {
    out.push_back(Compare(rb.linears[i], cb.linears[i], layer, RoleName(rb.linears[i].role), folded));
  }
  return out;
}

WeightError CompareHeadWeights(Model& ref, Model& comp, const FoldedScales& folded) {
  return Compare(ref.lm_head(), comp.lm_head(), -1, "lm_head", folded);
}

std::vector<WeightError> CompareWeights(Model& ref, Model& comp, const FoldedScales& folded) {
  std::vector<WeightError> out;
  for (int l = 0; l < ref.num_layers(); ++l) {
    std::vector<WeightError> block = CompareBlockWeights(ref, comp, l, folded);
    out.insert(out.end(), block.begin(), block.end());
  }
  out.push_back(CompareHeadWeights(ref, comp, folded));
  return out;
}

}  // namespace pc
