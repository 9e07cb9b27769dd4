// compress/awq_groups.h — AWQ scale groups of one block, resolved from the architecture's
// table (ArchSpec::awq_groups), and the folding of a group's scales into the block.
//
// A scale group is (previous op, member linears, where the loss is measured). Scaling the
// members' input columns by s and folding 1/s into the previous op leaves the block's
// function unchanged (up to rounding):
//   norm        weight /= s, bias /= s                      (every consumer of the norm is a member)
//   linear      its last len(s) output rows /= s, the same bias entries /= s   (fused qkv -> o: the v rows)
//   activation  act_scales *= s   (the forward computes act(x) / act_scales before the member)
// and W_member[:, j] *= s_j for every member.
#pragma once

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "model/model.h"

namespace pc::awq {

struct ScaleGroup {
  PrevKind prev = PrevKind::kAttnNorm;
  int prev_linear = -1;       // index in Block::linears for PrevKind::kLinear
  std::vector<int> members;   // indices in Block::linears
  Inspect inspect = Inspect::kMembers;
  std::string prev_name;      // HF module name of the previous op ("model.layers.3.input_layernorm")
  std::string name;           // "model.layers.3.input_layernorm -> q_proj,k_proj,v_proj"
  std::string kind;           // "attn_norm->q,k,v", "v->o", "act->down", ...
  std::string skip_reason;    // non-empty: the group is not searched (the reason goes to the log)
  bool active() const { return skip_reason.empty(); }
};

const char* InspectName(Inspect i);  // "attention", "mlp", "members"
const char* PrevKindName(PrevKind p);  // "attn_norm", "mlp_norm", "linear", "activation"

// The groups of `block` in the table's order. A group is skipped (with its reason) when its
// previous op does not feed its members in this model (post-LN OPT norms), when llm-awq's
// shape condition fails (v -> o under grouped-query attention), when the model has no
// activation scales for an activation group, or when not every member is in `assigned` (the
// linears of one method instance: a group is searched by one instance or not at all).
std::vector<ScaleGroup> ResolveGroups(const Model& model, const Block& block, const std::vector<int>& assigned);

// Folds s (len(s),) into the previous op (1/s) and the members (·s), in the block's dtype.
void FoldScales(Block& block, const ScaleGroup& group, const at::Tensor& s);

// Row indices (int64) of the value projection inside a fused q/k/v linear of `model`'s layout.
at::Tensor FusedValueRows(const Model& model);

}  // namespace pc::awq
