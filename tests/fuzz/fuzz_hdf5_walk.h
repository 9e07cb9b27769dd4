// tests/fuzz/fuzz_hdf5_walk.h — reads everything of an HDF5 file through the store's reader
// (shared by fuzz_hdf5_reader and fuzz_hdf5_bytes). Each read is its own step, so a pc::Error
// in one (the expected outcome for unexpected types and shapes) does not hide the others.
#pragma once

#include <string>

#include "store/file.h"
#include "tests/fuzz/fuzz_util.h"

namespace pc::fuzz {

inline void WalkAttributes(const pc::store::Group& g) {
  std::vector<std::string> names;
  ExpectOnlyPcErrors([&] { names = g.AttrNames(); });
  for (const auto& a : names) {
    ExpectOnlyPcErrors([&] { g.AttrType(a); });
    ExpectOnlyPcErrors([&] { g.GetAttr<std::string>(a); });
    ExpectOnlyPcErrors([&] { g.GetAttr<int64_t>(a); });
    ExpectOnlyPcErrors([&] { g.GetAttr<double>(a); });
    ExpectOnlyPcErrors([&] { g.GetAttr<bool>(a); });
    ExpectOnlyPcErrors([&] { g.GetAttr<std::vector<double>>(a); });
    ExpectOnlyPcErrors([&] { g.GetAttr<std::vector<int64_t>>(a); });
    ExpectOnlyPcErrors([&] { g.GetAttr<std::vector<std::string>>(a); });
  }
}

inline void WalkDataset(const pc::store::Group& g, const std::string& name) {
  ExpectOnlyPcErrors([&] { g.Info(name); });
  ExpectOnlyPcErrors([&] { g.ReadArray<double>(name); });
  ExpectOnlyPcErrors([&] { g.ReadArray<float>(name); });
  ExpectOnlyPcErrors([&] { g.ReadArray<int64_t>(name); });
  ExpectOnlyPcErrors([&] { g.ReadArray<int32_t>(name); });
  ExpectOnlyPcErrors([&] { g.ReadArray<uint8_t>(name); });
  ExpectOnlyPcErrors([&] { g.ReadArray<std::string>(name); });
  ExpectOnlyPcErrors([&] { g.ReadVector<double>(name, 2); });
}

inline void WalkGroup(const pc::store::Group& g, int depth) {
  if (depth > 6) return;
  WalkAttributes(g);
  std::vector<std::string> children;
  ExpectOnlyPcErrors([&] { children = g.List(); });
  ExpectOnlyPcErrors([&] { g.List(pc::store::Order::kName); });
  for (const auto& child : children) {
    pc::store::ChildKind kind = pc::store::ChildKind::kMissing;
    ExpectOnlyPcErrors([&] { kind = g.Kind(child); });
    if (kind == pc::store::ChildKind::kDataset) WalkDataset(g, child);
    if (kind != pc::store::ChildKind::kGroup) continue;
    ExpectOnlyPcErrors([&] {
      if (g.IsTable(child)) g.ReadTable(child);
    });
    ExpectOnlyPcErrors([&] { WalkGroup(g.OpenGroup(child), depth + 1); });
  }
}

// Opens `path` as a results file (schema and kind checks) and reads everything in it.
inline void WalkFile(const std::string& path) {
  ExpectOnlyPcErrors([&] {
    pc::store::File f = pc::store::File::OpenRead(path);
    WalkGroup(f.root(), 0);
  });
  ExpectOnlyPcErrors([&] { pc::store::File::OpenRead(path, "measure"); });
}

}  // namespace pc::fuzz
