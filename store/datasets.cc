// Datasets: N-D numeric arrays and 1-D string arrays, optionally chunked + gzip.
#include <algorithm>

#include "core/error.h"
#include "store/group.h"
#include "store/h5_internal.h"

namespace pc::store {
using detail::Hid;
using detail::LastError;

namespace {

constexpr int64_t kTargetChunkBytes = 1 << 20;

size_t ElementBytes(DType type) {
  switch (type) {
    case DType::kFloat64:
    case DType::kInt64: return 8;
    case DType::kFloat32:
    case DType::kInt32: return 4;
    case DType::kUInt8:
    case DType::kBool: return 1;
    case DType::kString: return sizeof(hvl_t);
  }
  return 8;
}

// Automatic chunks: the whole array, halved along the outermost dimensions until about 1 MiB.
Shape AutoChunk(const Shape& dims, size_t element_bytes) {
  Shape chunk = dims;
  for (size_t i = 0; i < chunk.size(); ++i) {
    while (chunk[i] > 1 && NumElements(chunk) * static_cast<int64_t>(element_bytes) > kTargetChunkBytes) {
      chunk[i] = (chunk[i] + 1) / 2;
    }
  }
  return chunk;
}

// The dataset creation properties for `options` (default: contiguous).
Hid CreatePlist(const std::string& where, const std::string& name, DType type, const Shape& dims,
                const WriteOptions& options) {
  Hid plist(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  PC_ASSERT(plist.valid(), LastError());
  PC_CHECK(options.gzip_level >= 0 && options.gzip_level <= 9, where, ": dataset '", name, "': gzip level ",
           options.gzip_level, " is out of range 0..9");
  int64_t bytes = NumElements(dims) * static_cast<int64_t>(ElementBytes(type));
  bool compress = options.gzip_level > 0 && bytes >= options.compress_min_bytes;
  bool chunked = compress || !options.chunk.empty();
  if (!chunked || NumElements(dims) == 0) return plist;  // empty arrays cannot be chunked
  Shape chunk = options.chunk;
  if (chunk.empty()) {
    chunk = AutoChunk(dims, ElementBytes(type));
  } else {
    PC_CHECK(chunk.size() == dims.size(), where, ": dataset '", name, "': chunk shape ", ShapeString(chunk),
             " does not match the rank of shape ", ShapeString(dims));
    for (size_t i = 0; i < chunk.size(); ++i) {
      PC_CHECK(chunk[i] >= 1, where, ": dataset '", name, "': invalid chunk shape ", ShapeString(chunk));
      chunk[i] = std::min(chunk[i], dims[i]);
    }
  }
  std::vector<hsize_t> c(chunk.begin(), chunk.end());
  PC_CHECK(H5Pset_chunk(plist.get(), static_cast<int>(c.size()), c.data()) >= 0, where, ": dataset '", name,
           "': invalid chunk shape ", ShapeString(chunk), ": ", LastError());
  if (compress) {
    PC_CHECK(H5Zfilter_avail(H5Z_FILTER_DEFLATE) > 0, where, ": dataset '", name,
             "': this HDF5 library has no gzip (deflate) filter");
    if (type != DType::kString) H5Pset_shuffle(plist.get());
    PC_CHECK(H5Pset_deflate(plist.get(), static_cast<unsigned>(options.gzip_level)) >= 0, where, ": dataset '", name,
             "': ", LastError());
  }
  return plist;
}

}  // namespace

void Group::WriteRaw(const std::string& name, DType type, const void* values, const Shape& shape,
                     const WriteOptions& options) const {
  detail::CheckName(Where(), "dataset", name);
  detail::CheckOpen(*file_, Where(), Str("write dataset '", name, "'"), true);
  PC_CHECK(!shape.empty(), Where(), ": cannot write dataset '", name, "': the shape needs at least one dimension");
  for (int64_t d : shape)
    PC_CHECK(d >= 0, Where(), ": cannot write dataset '", name, "': invalid shape ", ShapeString(shape));
  PC_CHECK(!Has(name), Where(), ": cannot write dataset '", name, "': '", name,
           "' already exists (results are written once, never edited in place)");
  size_t count = static_cast<size_t>(NumElements(shape));

  // Strings are written as variable-length UTF-8 (h5py: .asstr()).
  Hid string_type;
  std::vector<const char*> string_ptrs;
  hid_t file_type, mem_type;
  const void* buffer = values;
  if (type == DType::kString) {
    PC_CHECK(shape.size() == 1, Where(), ": cannot write dataset '", name, "': string arrays are 1-D, got shape ",
             ShapeString(shape));
    const auto* strings = static_cast<const std::string*>(values);
    detail::CheckStrings(Where(), Str("dataset '", name, "'"), strings, count);
    string_ptrs.reserve(count);
    for (size_t i = 0; i < count; ++i) string_ptrs.push_back(strings[i].c_str());
    string_type = detail::VarStringType();
    file_type = mem_type = string_type.get();
    buffer = string_ptrs.data();
  } else {
    file_type = detail::FileType(type);
    mem_type = detail::MemType(type);
  }

  std::vector<hsize_t> dims(shape.begin(), shape.end());
  Hid space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
  PC_CHECK(space.valid(), Where(), ": cannot write dataset '", name, "' of shape ", ShapeString(shape), ": ",
           LastError());
  Hid plist = CreatePlist(Where(), name, type, shape, options);
  Hid g = detail::OpenGroupAt(*file_, path_, Where());
  Hid dset(H5Dcreate2(g.get(), name.c_str(), file_type, space.get(), H5P_DEFAULT, plist.get(), H5P_DEFAULT), H5Dclose);
  PC_CHECK(dset.valid(), Where(), ": cannot create dataset '", name, "': ", LastError());
  if (count > 0) {
    PC_CHECK(H5Dwrite(dset.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer) >= 0, Where(),
             ": cannot write dataset '", name, "': ", LastError());
  }
  // Chunks are cached and written on close: a full disk can show up here.
  PC_CHECK(dset.Close() >= 0, Where(), ": cannot write dataset '", name, "': ", LastError());
}

DatasetInfo Group::Info(const std::string& name) const {
  detail::CheckOpen(*file_, Where(), Str("read dataset '", name, "'"), false);
  ChildKind kind = Kind(name);
  PC_CHECK(kind != ChildKind::kMissing, Where(), ": no dataset '", name, "' (children: ", detail::NameList(List()),
           ")");
  PC_CHECK(kind == ChildKind::kDataset, Where(), ": '", name, "' is ",
           kind == ChildKind::kGroup ? "a group" : "not a dataset", ", expected a dataset");
  Hid g = detail::OpenGroupAt(*file_, path_, Where());
  Hid dset(H5Dopen2(g.get(), name.c_str(), H5P_DEFAULT), H5Dclose);
  PC_CHECK(dset.valid(), Where(), ": cannot open dataset '", name, "': ", LastError());
  Hid type(H5Dget_type(dset.get()), H5Tclose);
  Hid space(H5Dget_space(dset.get()), H5Sclose);
  PC_CHECK(type.valid() && space.valid(), Where(), ": cannot read dataset '", name, "': ", LastError());
  DatasetInfo info;
  std::string type_name;
  PC_CHECK(detail::ClassifyType(type.get(), &info.dtype, &type_name) && info.dtype != DType::kBool, Where(),
           ": dataset '", name, "' holds ", type_name, " values, which the store does not read");
  info.shape = detail::SpaceShape(space.get());
  return info;
}

void Group::ReadRaw(const std::string& name, DType type, const Shape& expected, Shape* shape,
                    const std::function<void*(size_t)>& alloc) const {
  DatasetInfo info = Info(name);
  PC_CHECK(info.dtype == type, Where(), ": dataset '", name, "' holds ", DTypeName(info.dtype), " values, expected ",
           DTypeName(type));
  bool shape_ok = expected.empty() || expected.size() == info.shape.size();
  for (size_t i = 0; shape_ok && i < expected.size(); ++i) shape_ok = expected[i] == -1 || expected[i] == info.shape[i];
  PC_CHECK(shape_ok, Where(), ": dataset '", name, "' has shape ", ShapeString(info.shape), ", expected ",
           ShapeString(expected), expected.size() == 1 && expected[0] == -1 ? " (a 1-D array)" : "");
  *shape = info.shape;
  size_t count = static_cast<size_t>(NumElements(info.shape));
  void* out = alloc(count);
  if (count == 0) return;

  Hid g = detail::OpenGroupAt(*file_, path_, Where());
  Hid dset(H5Dopen2(g.get(), name.c_str(), H5P_DEFAULT), H5Dclose);
  PC_CHECK(dset.valid(), Where(), ": cannot open dataset '", name, "': ", LastError());
  if (type == DType::kString) {
    Hid stored(H5Dget_type(dset.get()), H5Tclose);
    std::vector<std::string> strings;
    std::string error;
    PC_CHECK(detail::ReadStrings(dset.get(), false, stored.get(), count, &strings, &error), Where(),
             ": cannot read dataset '", name, "': ", error);
    std::move(strings.begin(), strings.end(), static_cast<std::string*>(out));
    return;
  }
  PC_CHECK(H5Dread(dset.get(), detail::MemType(type), H5S_ALL, H5S_ALL, H5P_DEFAULT, out) >= 0, Where(),
           ": cannot read dataset '", name, "': ", LastError());
}

}  // namespace pc::store
