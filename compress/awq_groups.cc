#include "compress/awq_groups.h"

#include <algorithm>
#include <set>

#include "core/error.h"
#include "core/strings.h"
#include "core/tensor_util.h"

namespace pc::awq {

const char* InspectName(Inspect i) {
  switch (i) {
    case Inspect::kAttention: return "attention";
    case Inspect::kMlp: return "mlp";
    case Inspect::kMembers: return "members";
  }
  return "?";
}

const char* PrevKindName(PrevKind p) {
  switch (p) {
    case PrevKind::kAttnNorm: return "attn_norm";
    case PrevKind::kMlpNorm: return "mlp_norm";
    case PrevKind::kLinear: return "linear";
    case PrevKind::kActivation: return "activation";
  }
  return "?";
}

namespace {

std::string Leaf(const std::string& name) {
  size_t dot = name.rfind('.');
  return dot == std::string::npos ? name : name.substr(dot + 1);
}

// The linears that read a norm's output: every member of a norm group must be one of them and
// all of them must be members, or folding 1/s into the norm would change a non-member's input.
std::set<int> NormConsumers(const Block& block, PrevKind prev) {
  std::set<int> out;
  const std::vector<Role> roles = prev == PrevKind::kAttnNorm ? std::vector<Role>{Role::kQ, Role::kK, Role::kV, Role::kQKV}
                                                              : std::vector<Role>{Role::kGate, Role::kUp};
  for (Role r : roles) {
    int i = block.index_of[static_cast<int>(r)];
    if (i >= 0) out.insert(i);
  }
  return out;
}

}  // namespace

std::vector<ScaleGroup> ResolveGroups(const Model& model, const Block& block, const std::vector<int>& assigned) {
  const std::set<int> mine(assigned.begin(), assigned.end());
  std::vector<ScaleGroup> out;
  for (const ScaleGroupSpec& spec : model.arch().awq_groups) {
    ScaleGroup g;
    g.prev = spec.prev;
    g.inspect = spec.inspect;
    std::vector<std::string> leaves, roles;
    std::string missing;
    for (Role r : spec.members) {
      int i = block.index_of[static_cast<int>(r)];
      if (i < 0) {
        missing = RoleName(r);
        continue;
      }
      g.members.push_back(i);
      leaves.push_back(Leaf(block.linears[i].name));
      roles.push_back(RoleName(r));
    }
    std::string prev_kind;
    switch (spec.prev) {
      case PrevKind::kAttnNorm:
        g.prev_name = block.attn_norm.name;
        prev_kind = "attn_norm";
        break;
      case PrevKind::kMlpNorm:
        g.prev_name = block.mlp_norm.name;
        prev_kind = "mlp_norm";
        break;
      case PrevKind::kLinear:
        g.prev_linear = block.index_of[static_cast<int>(spec.prev_linear)];
        prev_kind = RoleName(spec.prev_linear);
        g.prev_name = g.prev_linear >= 0 ? block.linears[g.prev_linear].name : std::string(RoleName(spec.prev_linear));
        break;
      case PrevKind::kActivation:
        g.prev_name = EndsWith(block.act_scales_name, ".scales")
                          ? block.act_scales_name.substr(0, block.act_scales_name.size() - 7)
                          : "layers." + std::to_string(block.layer) + ".activation";
        prev_kind = "act";
        break;
    }
    g.kind = prev_kind + "->" + Join(roles, ",");
    g.name = g.prev_name + " -> " + Join(leaves, ",");
    const ModelConfig& c = model.config();
    if (!missing.empty() || (spec.prev == PrevKind::kLinear && g.prev_linear < 0)) {
      g.skip_reason = "this block has no " + (missing.empty() ? std::string(RoleName(spec.prev_linear)) : missing) +
                      " linear";
    } else if ((spec.prev == PrevKind::kAttnNorm || spec.prev == PrevKind::kMlpNorm) && !c.pre_norm) {
      g.skip_reason = "post-LN block (do_layer_norm_before=false): " + g.prev_name + " does not feed " +
                      Join(leaves, ",");
    } else if (spec.only_if_shapes_match &&
               block.linears[g.prev_linear].weight.sizes() != block.linears[g.members[0]].weight.sizes()) {
      const Linear& p = block.linears[g.prev_linear];
      const Linear& m = block.linears[g.members[0]];
      g.skip_reason = Leaf(p.name) + " " + ShapeString(p.weight.sizes()) + " and " + Leaf(m.name) + " " +
                      ShapeString(m.weight.sizes()) +
                      " differ in shape (grouped-query attention); llm-awq skips this group";
    } else if (spec.prev == PrevKind::kLinear &&
               block.linears[g.prev_linear].out_features() < block.linears[g.members[0]].in_features()) {
      g.skip_reason = g.prev_name + " has fewer output rows than " + Join(leaves, ",") + " has inputs";
    } else if (spec.prev == PrevKind::kActivation && !block.act_scales.defined()) {
      g.skip_reason = "the model has no activation scales to absorb 1/s";
    } else {
      std::vector<std::string> foreign;
      for (int i : g.members) {
        if (!mine.count(i)) foreign.push_back(Leaf(block.linears[i].name));
      }
      if (!foreign.empty()) {
        g.skip_reason = Join(foreign, ",") + " not compressed by this awq instance (a group is scaled as a whole)";
      }
    }
    if (g.active() && (spec.prev == PrevKind::kAttnNorm || spec.prev == PrevKind::kMlpNorm)) {
      PC_ASSERT(NormConsumers(block, spec.prev) == std::set<int>(g.members.begin(), g.members.end()),
                "AWQ group table of ", model.arch().model_type, ": ", g.name, " is not every consumer of the norm");
    }
    out.push_back(std::move(g));
  }
  return out;
}

void FoldScales(Block& block, const ScaleGroup& g, const at::Tensor& s_in) {
  PC_ASSERT(g.active(), "folding a skipped group");
  const int64_t n = s_in.numel();
  auto dtype_of = [](const at::Tensor& t) { return t.scalar_type(); };
  auto div_norm = [&](Norm& norm) {
    norm.weight = norm.weight / s_in.to(dtype_of(norm.weight));
    if (norm.bias.defined()) norm.bias = norm.bias / s_in.to(dtype_of(norm.bias));
  };
  switch (g.prev) {
    case PrevKind::kAttnNorm: div_norm(block.attn_norm); break;
    case PrevKind::kMlpNorm: div_norm(block.mlp_norm); break;
    case PrevKind::kLinear: {
      Linear& p = block.linears[g.prev_linear];
      const int64_t first = p.out_features() - n;  // the last rows (the v rows of a fused [q; k; v])
      at::Tensor w = p.weight.clone();
      w.narrow(0, first, n).div_(s_in.to(dtype_of(w)).unsqueeze(1));
      p.weight = w;
      if (p.bias.defined()) {
        at::Tensor b = p.bias.clone();
        b.narrow(0, first, n).div_(s_in.to(dtype_of(b)));
        p.bias = b;
      }
      break;
    }
    case PrevKind::kActivation:
      block.act_scales = block.act_scales * s_in.to(dtype_of(block.act_scales));
      break;
  }
  for (int i : g.members) {
    Linear& m = block.linears[i];
    PC_ASSERT(m.in_features() == n, "scale length ", n, " for ", m.name, " with ", m.in_features(), " inputs");
    m.weight = m.weight * s_in.to(dtype_of(m.weight)).unsqueeze(0);
  }
}

at::Tensor FusedValueRows(const Model& model) {
  const ModelConfig& c = model.config();
  const int64_t H = c.heads, hd = c.head_dim;
  switch (model.arch().qkv) {
    case QkvLayout::kFusedBlocks:  // [q; k; v], each H*hd rows
      return at::arange(2 * H * hd, 3 * H * hd, at::kLong);
    case QkvLayout::kFusedPerHead: {  // per head [q k v], hd rows each
      at::Tensor head = at::arange(H, at::kLong).unsqueeze(1) * (3 * hd);
      return (head + 2 * hd + at::arange(hd, at::kLong).unsqueeze(0)).reshape({-1});
    }
    case QkvLayout::kSeparate: break;
  }
  PC_ASSERT(false, "no fused q/k/v in ", model.arch().model_type);
  return at::Tensor();
}

}  // namespace pc::awq
