// Fuzz target: the HDF5 results reader (store/) on well-formed HDF5 files of fuzzed content.
// The input is a little program that libhdf5's writer API runs: groups (creation order tracked
// or not), attributes and datasets of any HDF5 type the store knows and some it does not
// (int8/16, uint64, fixed-length strings, enums, compounds), any rank and extent, chunked and
// compressed or not, "columns"/"rows" attributes that make a group look like a table. Then every
// attribute, dataset and table is read through pc::store (tests/fuzz/fuzz_hdf5_walk.h).
// Raw file bytes are fuzzed by the opt-in target fuzz_hdf5_bytes (libhdf5's own decoder is not
// hardened; docs/RELIABILITY.md).
#include <hdf5.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_hdf5_walk.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool empty() const { return pos_ >= size_; }
  uint8_t Byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  int Pick(int n) { return Byte() % n; }
  std::string Bytes(size_t n) {
    std::string s;
    while (s.size() < n && !empty()) s += static_cast<char>(Byte());
    return s;
  }
  // A name: usually one of a few common ones (so that tables find their columns), else raw bytes.
  std::string Name() {
    static const char* kNames[] = {"perpcomp_schema", "perpcomp_kind", "columns", "rows", "name", "iso",
                                   "runs", "sites", "seq_len", "a", "b"};
    int k = Pick(16);
    if (k < 11) return kNames[k];
    return Bytes(1 + Pick(8));
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// Closes an HDF5 id at scope exit (negative ids are failures: nothing to close).
struct Id {
  hid_t id;
  herr_t (*close)(hid_t);
  ~Id() {
    if (id >= 0) close(id);
  }
};

// An element type from the input; `vlen` tells whether elements are char* (variable strings).
hid_t MakeType(Input& in, bool* vlen) {
  *vlen = false;
  switch (in.Pick(14)) {
    case 0: return H5Tcopy(H5T_NATIVE_DOUBLE);
    case 1: return H5Tcopy(H5T_NATIVE_FLOAT);
    case 2: return H5Tcopy(H5T_NATIVE_INT64);
    case 3: return H5Tcopy(H5T_NATIVE_INT32);
    case 4: return H5Tcopy(H5T_NATIVE_UINT8);
    case 5: return H5Tcopy(H5T_NATIVE_INT8);
    case 6: return H5Tcopy(H5T_NATIVE_INT16);
    case 7: return H5Tcopy(H5T_NATIVE_UINT64);
    case 8:
    case 9: {  // variable-length string, UTF-8 or ASCII
      hid_t t = H5Tcopy(H5T_C_S1);
      H5Tset_size(t, H5T_VARIABLE);
      H5Tset_cset(t, in.Pick(2) ? H5T_CSET_UTF8 : H5T_CSET_ASCII);
      *vlen = true;
      return t;
    }
    case 10: {  // fixed-length string
      hid_t t = H5Tcopy(H5T_C_S1);
      H5Tset_size(t, 1 + in.Pick(8));
      H5Tset_strpad(t, in.Pick(2) ? H5T_STR_NULLPAD : H5T_STR_NULLTERM);
      return t;
    }
    case 11: {  // an int8 enum: h5py's bool (FALSE/TRUE) or other members
      hid_t t = H5Tenum_create(H5T_NATIVE_INT8);
      int8_t v0 = 0, v1 = static_cast<int8_t>(in.Pick(3));
      H5Tenum_insert(t, in.Pick(4) ? "FALSE" : "NO", &v0);
      if (v1 != v0) H5Tenum_insert(t, "TRUE", &v1);
      return t;
    }
    case 12: {  // a compound {int32, double}
      hid_t t = H5Tcreate(H5T_COMPOUND, 16);
      H5Tinsert(t, "i", 0, H5T_NATIVE_INT32);
      H5Tinsert(t, "d", 8, H5T_NATIVE_DOUBLE);
      return t;
    }
    default: return H5Tcopy(H5T_IEEE_F64BE);  // big-endian double
  }
}

// A dataspace: scalar, or rank 1..3 with extents 0..5.
hid_t MakeSpace(Input& in, hsize_t* count) {
  int rank = in.Pick(4);
  *count = 1;
  if (rank == 0) return H5Screate(H5S_SCALAR);
  hsize_t dims[3];
  for (int i = 0; i < rank; ++i) {
    dims[i] = in.Pick(6);
    *count *= dims[i];
  }
  return H5Screate_simple(rank, dims, nullptr);
}

// Element data for `count` elements of `type`: bytes from the input, or char* strings.
struct Buffer {
  std::vector<uint8_t> bytes;
  std::vector<std::string> strings;
  std::vector<const char*> pointers;
  const void* Fill(Input& in, hid_t type, bool vlen, hsize_t count) {
    if (vlen) {
      for (hsize_t i = 0; i < count; ++i) strings.push_back(in.Bytes(in.Pick(12)));
      for (const auto& s : strings) pointers.push_back(s.c_str());
      return pointers.data();
    }
    size_t n = count * H5Tget_size(type);
    bytes.resize(n > 0 ? n : 1);
    for (auto& b : bytes) b = in.Byte();
    return bytes.data();
  }
};

struct Builder {
  Input& in;
  std::vector<std::string> groups{"/"};
  hid_t file;

  const std::string& AnyGroup() { return groups[in.Pick(static_cast<int>(groups.size()))]; }

  void Attribute(const std::string& group, const std::string& name) {
    bool vlen;
    Id type{MakeType(in, &vlen), H5Tclose};
    hsize_t count;
    Id space{MakeSpace(in, &count), H5Sclose};
    Id g{H5Oopen(file, group.c_str(), H5P_DEFAULT), H5Oclose};
    if (g.id < 0 || type.id < 0 || space.id < 0) return;
    if (H5Aexists(g.id, name.c_str()) > 0) H5Adelete(g.id, name.c_str());
    Id a{H5Acreate2(g.id, name.c_str(), type.id, space.id, H5P_DEFAULT, H5P_DEFAULT), H5Aclose};
    Buffer buf;
    if (a.id >= 0) H5Awrite(a.id, type.id, buf.Fill(in, type.id, vlen, count));
  }

  void Dataset(const std::string& group, const std::string& name) {
    bool vlen;
    Id type{MakeType(in, &vlen), H5Tclose};
    hsize_t count;
    Id space{MakeSpace(in, &count), H5Sclose};
    Id g{H5Gopen2(file, group.c_str(), H5P_DEFAULT), H5Gclose};
    if (g.id < 0 || type.id < 0 || space.id < 0) return;
    Id dcpl{H5Pcreate(H5P_DATASET_CREATE), H5Pclose};
    int rank = H5Sget_simple_extent_ndims(space.id);
    if (rank > 0 && in.Pick(4) == 0) {  // chunked, maybe shuffled and compressed
      hsize_t chunk[3] = {1 + static_cast<hsize_t>(in.Pick(3)), 1, 1};
      H5Pset_chunk(dcpl.id, rank, chunk);
      if (in.Pick(2)) H5Pset_shuffle(dcpl.id);
      H5Pset_deflate(dcpl.id, in.Pick(10));
    }
    Id d{H5Dcreate2(g.id, name.c_str(), type.id, space.id, H5P_DEFAULT, dcpl.id, H5P_DEFAULT), H5Dclose};
    Buffer buf;
    if (d.id >= 0 && count > 0) H5Dwrite(d.id, type.id, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.Fill(in, type.id, vlen, count));
  }

  void Group(const std::string& parent, const std::string& name) {
    Id gcpl{H5Pcreate(H5P_GROUP_CREATE), H5Pclose};
    if (in.Pick(2)) {
      H5Pset_link_creation_order(gcpl.id, H5P_CRT_ORDER_TRACKED | (in.Pick(2) ? H5P_CRT_ORDER_INDEXED : 0));
      H5Pset_attr_creation_order(gcpl.id, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
    }
    Id p{H5Gopen2(file, parent.c_str(), H5P_DEFAULT), H5Gclose};
    if (p.id < 0) return;
    Id g{H5Gcreate2(p.id, name.c_str(), H5P_DEFAULT, gcpl.id, H5P_DEFAULT), H5Gclose};
    if (g.id >= 0) groups.push_back(parent == "/" ? "/" + name : parent + "/" + name);
  }

  // A table header: "columns" naming some datasets, "rows" as an int64.
  void TableHeader(const std::string& group) {
    std::vector<std::string> names;
    for (int i = in.Pick(4); i > 0; --i) names.push_back(in.Name());
    std::vector<const char*> ptrs;
    for (const auto& s : names) ptrs.push_back(s.c_str());
    Id type{H5Tcopy(H5T_C_S1), H5Tclose};
    H5Tset_size(type.id, H5T_VARIABLE);
    H5Tset_cset(type.id, H5T_CSET_UTF8);
    hsize_t n = names.size();
    Id space{H5Screate_simple(1, &n, nullptr), H5Sclose};
    Id g{H5Gopen2(file, group.c_str(), H5P_DEFAULT), H5Gclose};
    if (g.id < 0) return;
    if (H5Aexists(g.id, "columns") > 0) H5Adelete(g.id, "columns");
    Id a{H5Acreate2(g.id, "columns", type.id, space.id, H5P_DEFAULT, H5P_DEFAULT), H5Aclose};
    if (a.id >= 0) H5Awrite(a.id, type.id, ptrs.data());
    int64_t rows = static_cast<int64_t>(in.Pick(8)) - 1;
    Id s1{H5Screate(H5S_SCALAR), H5Sclose};
    if (H5Aexists(g.id, "rows") > 0) H5Adelete(g.id, "rows");
    Id r{H5Acreate2(g.id, "rows", H5T_STD_I64LE, s1.id, H5P_DEFAULT, H5P_DEFAULT), H5Aclose};
    if (r.id >= 0) H5Awrite(r.id, H5T_NATIVE_INT64, &rows);
  }

  void RootAttributes() {
    Id s1{H5Screate(H5S_SCALAR), H5Sclose};
    int64_t schema = in.Pick(8) == 0 ? static_cast<int64_t>(in.Pick(5)) - 1 : 1;
    Id a{H5Acreate2(file, "perpcomp_schema", H5T_STD_I64LE, s1.id, H5P_DEFAULT, H5P_DEFAULT), H5Aclose};
    H5Awrite(a.id, H5T_NATIVE_INT64, &schema);
    Id type{H5Tcopy(H5T_C_S1), H5Tclose};
    H5Tset_size(type.id, H5T_VARIABLE);
    H5Tset_cset(type.id, H5T_CSET_UTF8);
    std::string kind = in.Pick(8) == 0 ? in.Bytes(in.Pick(10)) : "measure";
    const char* p = kind.c_str();
    Id k{H5Acreate2(file, "perpcomp_kind", type.id, s1.id, H5P_DEFAULT, H5P_DEFAULT), H5Aclose};
    H5Awrite(k.id, type.id, &p);
  }

  void Run() {
    RootAttributes();
    for (int op = 0; op < 32 && !in.empty(); ++op) {
      int what = in.Pick(5);
      std::string group = AnyGroup();
      if (what == 4) {
        TableHeader(group);
        continue;
      }
      std::string name = in.Name();
      if (what == 0) Group(group, name);
      if (what == 1) Attribute(group, name);
      if (what == 2 || what == 3) Dataset(group, name);
    }
  }
};

const bool kSilentHdf5 = (H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr), true);

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)kSilentHdf5;
  static const std::string path = pc::fuzz::ScratchPath("fuzz.h5");
  Input in(data, size);
  {
    Id fapl{H5Pcreate(H5P_FILE_ACCESS), H5Pclose};
    if (in.Pick(2)) H5Pset_libver_bounds(fapl.id, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
    Id fcpl{H5Pcreate(H5P_FILE_CREATE), H5Pclose};
    if (in.Pick(2)) {
      H5Pset_link_creation_order(fcpl.id, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
      H5Pset_attr_creation_order(fcpl.id, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
    }
    Id file{H5Fcreate(path.c_str(), H5F_ACC_TRUNC, fcpl.id, fapl.id), H5Fclose};
    if (file.id < 0) std::abort();
    Builder{in, {"/"}, file.id}.Run();
  }
  pc::fuzz::WalkFile(path);
  return 0;
}
