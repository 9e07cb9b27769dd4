// probes/layers.h — the layers a probe acts on (docs/SCIENCE.md: --layers A-B,
// 0-based, inclusive; every listed layer is treated in the same forward pass).
#pragma once

#include <string>

namespace pc::probes {

struct LayerRange {
  int first = 0, last = -1;  // inclusive; empty when last < first
  bool Contains(int layer) const { return layer >= first && layer <= last; }
  int count() const { return last >= first ? last - first + 1 : 0; }
  std::string ToString() const;  // "2-5", or "3" for one layer
};

LayerRange AllLayers(int num_layers);
// The middle third, as the seed's perturbation (layers 8-15 of 24): [L/3, max(L/3, 2L/3 - 1)].
LayerRange MiddleLayers(int num_layers);

// "A-B", "A", "all" or "middle" against a model of `num_layers` layers. Errors name `what` (the
// option), the text and the model's layer count ("... the model has 6 layers (0-5)").
LayerRange ParseLayerRange(const std::string& text, int num_layers, const std::string& what);

}  // namespace pc::probes
