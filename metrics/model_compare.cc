#include "metrics/model_compare.h"

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

std::vector<TensorShape> Tensors(Model& m, const std::set<std::string>& skip) {
  std::vector<TensorShape> out;
  m.ForEachTensor([&](const std::string& name, const at::Tensor& t, StDType) {
    if (!skip.count(name)) out.push_back({name, t.sizes().vec()});
  });
  return out;
}

double Sparsity(const at::Tensor& w) {
  return w.numel() == 0 ? 0.0 : static_cast<double>(w.eq(0).sum().item<int64_t>()) / static_cast<double>(w.numel());
}

WeightError Compare(const Linear& r, const Linear& c, int layer, const std::string& role, const FoldedScales& folded) {
  WeightError e;
  e.name = r.name;
  e.layer = layer;
  e.role = role;
  e.numel = r.weight.numel();
  at::Tensor w = folded.Carry(r.name, r.weight);  // (out, in) float64
  double ref_norm = w.norm().item<double>();
  double diff = (c.weight.to(at::kDouble) - w).norm().item<double>();
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
  for (Model* m : {&ref, &comp}) {
    for (int l = 0; l < m->num_layers(); ++l) {
      if (!m->block(l).act_scales_name.empty()) skip.insert(m->block(l).act_scales_name);
    }
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

std::vector<WeightError> CompareWeights(Model& ref, Model& comp, const FoldedScales& folded) {
  std::vector<WeightError> out;
  for (int l = 0; l < ref.num_layers(); ++l) {
    const Block& rb = ref.block(l);
    const Block& cb = comp.block(l);
    PC_ASSERT(rb.linears.size() == cb.linears.size(), "layer ", l, ": linears differ");
    for (size_t i = 0; i < rb.linears.size(); ++i) {
      out.push_back(Compare(rb.linears[i], cb.linears[i], l, RoleName(rb.linears[i].role), folded));
    }
  }
  out.push_back(Compare(ref.lm_head(), comp.lm_head(), -1, "lm_head", folded));
  return out;
}

}  // namespace pc
