#include "metrics/sites.h"

#include "core/error.h"
#include "model/sizes.h"

namespace pc {

const char* SiteTypeName(SiteType t) {
  switch (t) {
    case SiteType::kLinear: return "linear";
    case SiteType::kAttnUpdate: return "attn_update";
    case SiteType::kMlpUpdate: return "mlp_update";
    case SiteType::kBlockOutput: return "block_output";
    case SiteType::kFinalNorm: return "final_norm";
    case SiteType::kLogits: return "logits";
    case SiteType::kBlockUpdate: return "block_update";
  }
  return "?";
}

const char* ErrorKindName(ErrorKind k) { return k == ErrorKind::kAccumulated ? "accumulated" : "local"; }
const char* FrameName(Frame f) { return f == Frame::kSelf ? "self" : "incoming"; }

bool IsAttentionRole(Role role) {
  switch (role) {
    case Role::kQ:
    case Role::kK:
    case Role::kV:
    case Role::kQKV:
    case Role::kO: return true;
    default: return false;
  }
}

SiteIndex::SiteIndex(const Model& model) {
  const ModelConfig& c = model.config();
  auto add = [&](SiteEntry e) {
    for (ErrorKind kind : {ErrorKind::kAccumulated, ErrorKind::kLocal}) {
      bool updates = e.type == SiteType::kAttnUpdate || e.type == SiteType::kMlpUpdate;
      for (Frame frame : {Frame::kSelf, Frame::kIncoming}) {
        if (frame == Frame::kIncoming && !updates) continue;
        SiteEntry x = e;
        x.kind = kind;
        x.frame = frame;
        lookup_[Key(int(x.type), x.layer, x.index, int(kind), int(frame))] = static_cast<int>(entries_.size());
        entries_.push_back(std::move(x));
      }
    }
  };
  for (int l = 0; l < model.num_layers(); ++l) {
    // The block's linears as Model::LoadBlock makes them (the ArchSpec's order), from the config:
    // the index is built before any block is loaded.
    const std::vector<LinearSpec>& linears = model.arch().linears;
    for (size_t i = 0; i < linears.size(); ++i) {
      SiteEntry e;
      e.name = ExpandName(linears[i].name.hf, l);
      e.type = SiteType::kLinear;
      e.layer = l;
      e.index = static_cast<int>(i);
      e.role = linears[i].role;
      e.dim = BlockLinearDims(c, linears[i].role).out;
      add(e);
    }
    const std::string prefix = "layers." + std::to_string(l) + ".";
    for (SiteType t : {SiteType::kAttnUpdate, SiteType::kMlpUpdate, SiteType::kBlockOutput, SiteType::kBlockUpdate}) {
      SiteEntry e;
      e.name = prefix + SiteTypeName(t);
      e.type = t;
      e.layer = l;
      e.dim = c.hidden;
      add(e);
    }
  }
  if (c.has_final_norm) {
    SiteEntry e;
    e.name = "final_norm";
    e.type = SiteType::kFinalNorm;
    e.dim = c.hidden;
    add(e);
  }
  SiteEntry e;
  e.name = "logits";
  e.type = SiteType::kLogits;
  e.dim = c.vocab_size;
  add(e);
}

int SiteIndex::Find(SiteType type, int layer, int index, ErrorKind kind, Frame frame) const {
  auto it = lookup_.find(Key(int(type), layer, index, int(kind), int(frame)));
  return it == lookup_.end() ? -1 : it->second;
}

}  // namespace pc
