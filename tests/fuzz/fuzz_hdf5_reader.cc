// Fuzz target: the HDF5 results reader (open with the version/kind checks, walk groups, read
// attributes and tables). Note: malformed files can crash inside libhdf5 itself; such crashes
// are recorded in docs/RELIABILITY.md.
#include <cstddef>
#include <cstdint>
#include <string>

#include "store/file.h"
#include "tests/fuzz/fuzz_util.h"

namespace {
void Walk(const pc::store::Group& g, int depth) {
  if (depth > 4) return;
  for (const auto& a : g.AttrNames()) {
    switch (g.AttrType(a)) {
      case pc::store::DType::kString: g.GetAttr<std::string>(a); break;
      default: break;
    }
  }
  for (const auto& child : g.List()) {
    if (g.IsTable(child)) {
      g.ReadTable(child);
    } else if (g.IsGroup(child)) {
      Walk(g.OpenGroup(child), depth + 1);
    }
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = pc::fuzz::ScratchPath("fuzz.h5");
  pc::fuzz::WriteScratch(path, data, size);
  pc::fuzz::ExpectOnlyPcErrors([&] {
    pc::store::File f = pc::store::File::OpenRead(path);
    Walk(f.root(), 0);
  });
  return 0;
}
