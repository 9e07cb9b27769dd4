// metrics/sites.h — the measured sites of a model, each with its error kind and frame
// (docs/METRICS.md "Sites", "Error kinds", "Frames").
//
// One entry per (site, kind, frame), in forward order: per block, every linear (arch order),
// the attention update, the MLP update, the block output, the block update; then the final norm (when the model
// has one) and the logits. Within a site: accumulated before local, self before incoming.
// The "incoming" frame exists for the attention and MLP updates only.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "model/model.h"

namespace pc {

// kBlockUpdate: the whole block update Δ = block output − block input, self frame only (the
// directional-decomposition paper's third site beside the attention and MLP updates).
enum class SiteType : uint8_t { kLinear, kAttnUpdate, kMlpUpdate, kBlockOutput, kFinalNorm, kLogits, kBlockUpdate };
enum class ErrorKind : uint8_t { kAccumulated, kLocal };
enum class Frame : uint8_t { kSelf, kIncoming };

const char* SiteTypeName(SiteType t);  // "linear", "attn_update", "mlp_update", "block_output", "final_norm", "logits",
                                       // "block_update"
const char* ErrorKindName(ErrorKind k);  // "accumulated", "local"
const char* FrameName(Frame f);          // "self", "incoming"

// True for the roles of the attention sublayer (q, k, v, qkv, o); false for the MLP's.
bool IsAttentionRole(Role role);

struct SiteEntry {
  std::string name;     // linears: the HF module name; else "layers.3.attn_update", "final_norm", "logits"
  SiteType type = SiteType::kLinear;
  int layer = -1;       // -1 for final_norm and logits
  int index = -1;       // linear index in Block::linears, -1 otherwise
  Role role = Role::kQ; // linears only
  ErrorKind kind = ErrorKind::kAccumulated;
  Frame frame = Frame::kSelf;
  int64_t dim = 0;      // features of the site's vectors
};

class SiteIndex {
 public:
  explicit SiteIndex(const Model& model);
  const std::vector<SiteEntry>& entries() const { return entries_; }
  int size() const { return static_cast<int>(entries_.size()); }
  // The entry's position, or -1 when that site/kind/frame is not measured.
  int Find(SiteType type, int layer, int index, ErrorKind kind, Frame frame) const;

 private:
  using Key = std::tuple<int, int, int, int, int>;
  std::vector<SiteEntry> entries_;
  std::map<Key, int> lookup_;
};

}  // namespace pc
