#include "probes/layers.h"

#include "core/error.h"
#include "core/strings.h"

namespace pc::probes {

std::string LayerRange::ToString() const {
  return first == last ? std::to_string(first) : Str(first, "-", last);
}

LayerRange AllLayers(int num_layers) { return LayerRange{0, num_layers - 1}; }

LayerRange MiddleLayers(int num_layers) {
  const int a = num_layers / 3;
  return LayerRange{a, std::max(a, 2 * num_layers / 3 - 1)};
}

LayerRange ParseLayerRange(const std::string& text, int num_layers, const std::string& what) {
  PC_ASSERT(num_layers > 0, "a model without layers");
  const std::string t = Trim(text);
  if (t == "all") return AllLayers(num_layers);
  if (t == "middle") return MiddleLayers(num_layers);
  PC_CHECK(!t.empty() && t[0] != '-', what, ": expected A-B (0-based, inclusive), A, all or middle, got '", text, "'");
  auto [a, b] = ParseRange(t, what);
  PC_CHECK(b < num_layers, what, " ", t, ": layer ", b, " is out of range; the model has ", num_layers, " layers (0-",
           num_layers - 1, ")");
  return LayerRange{a, b};
}

}  // namespace pc::probes
