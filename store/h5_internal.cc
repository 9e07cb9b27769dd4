#include "store/h5_internal.h"

#include <cstring>
#include <mutex>
#include <vector>

#include "core/error.h"
#include "core/fs.h"
#include "core/text.h"

namespace pc::store {

const char* DTypeName(DType type) {
  switch (type) {
    case DType::kFloat64: return "float64";
    case DType::kFloat32: return "float32";
    case DType::kInt64: return "int64";
    case DType::kInt32: return "int32";
    case DType::kUInt8: return "uint8";
    case DType::kString: return "string";
    case DType::kBool: return "bool";
  }
  return "?";
}

std::string ShapeString(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

int64_t NumElements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace detail {

void InitHdf5() {
  static std::once_flag once;
  std::call_once(once, [] {
    // No H5close at exit: HDF5 1.10.8 crashes there (and on any second H5Fclose) when a
    // file's close failed on a write error (disk full). Files are closed by their owners.
    H5dont_atexit();
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  });
}

namespace {
struct ErrorEntry {
  std::string desc, minor;
};

herr_t CollectError(unsigned /*n*/, const H5E_error2_t* err, void* data) {
  auto* out = static_cast<std::vector<ErrorEntry>*>(data);
  ErrorEntry e;
  if (err->desc != nullptr) e.desc = err->desc;
  char minor[256] = {0};
  if (H5Eget_msg(err->min_num, nullptr, minor, sizeof minor) > 0) e.minor = minor;
  out->push_back(std::move(e));
  return 0;
}

// "..., error message = 'File too large', ..." -> "File too large".
std::string SystemMessage(const std::string& desc) {
  const std::string key = "error message = '";
  size_t p = desc.find(key);
  if (p == std::string::npos) return "";
  p += key.size();
  size_t q = desc.find('\'', p);
  return desc.substr(p, q == std::string::npos ? std::string::npos : q - p);
}
}  // namespace

std::string LastError() {
  std::vector<ErrorEntry> entries;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, CollectError, &entries);
  H5Eclear2(H5E_DEFAULT);
  for (const ErrorEntry& e : entries) {  // innermost first
    std::string sys = SystemMessage(e.desc);
    if (!sys.empty()) return Str(e.minor.empty() ? "system error" : e.minor, ": ", sys);
  }
  if (entries.empty()) return "unknown HDF5 error";
  const ErrorEntry& inner = entries.front();
  if (inner.desc.empty()) return inner.minor;
  return inner.desc;
}

FileState::~FileState() {
  std::string ignored;
  Close(&ignored);
}

void FileState::WriteImage() const {
  PC_ASSERT(in_memory && open, "WriteImage of a file not open in memory");
  PC_CHECK_OUTPUT(H5Fflush(id, H5F_SCOPE_LOCAL) >= 0, "cannot write '", display, "': ", LastError());
  const ssize_t size = H5Fget_file_image(id, nullptr, 0);
  PC_CHECK_OUTPUT(size >= 0, "cannot write '", display, "': ", LastError());
  std::vector<char> image(static_cast<size_t>(size));
  PC_CHECK_OUTPUT(H5Fget_file_image(id, image.data(), image.size()) == size, "cannot write '", display, "': ", LastError());
  fs::WriteWholeFile(real, image.data(), image.size(), display);
}

bool FileState::Close(std::string* error) {
  if (!open) return true;
  open = false;
  bool ok = true;
  if (writable && H5Fflush(id, H5F_SCOPE_LOCAL) < 0) {
    *error = LastError();
    ok = false;
  }
  if (H5Fclose(id) < 0) {
    if (ok) *error = LastError();
    ok = false;
  }
  id = -1;
  return ok;
}

hid_t MemType(DType type) {
  switch (type) {
    case DType::kFloat64: return H5T_NATIVE_DOUBLE;
    case DType::kFloat32: return H5T_NATIVE_FLOAT;
    case DType::kInt64: return H5T_NATIVE_INT64;
    case DType::kInt32: return H5T_NATIVE_INT32;
    case DType::kUInt8: return H5T_NATIVE_UINT8;
    case DType::kString:
    case DType::kBool: break;
  }
  PC_ASSERT(false, "MemType of ", DTypeName(type));
  return -1;
}

hid_t FileType(DType type) {
  switch (type) {
    case DType::kFloat64: return H5T_IEEE_F64LE;
    case DType::kFloat32: return H5T_IEEE_F32LE;
    case DType::kInt64: return H5T_STD_I64LE;
    case DType::kInt32: return H5T_STD_I32LE;
    case DType::kUInt8: return H5T_STD_U8LE;
    case DType::kString:
    case DType::kBool: break;
  }
  PC_ASSERT(false, "FileType of ", DTypeName(type));
  return -1;
}

bool ClassifyType(hid_t type, DType* out, std::string* name) {
  H5T_class_t cls = H5Tget_class(type);
  size_t size = H5Tget_size(type);
  switch (cls) {
    case H5T_INTEGER: {
      bool is_signed = H5Tget_sign(type) == H5T_SGN_2;
      if (is_signed && size == 8) {
        *out = DType::kInt64;
      } else if (is_signed && size == 4) {
        *out = DType::kInt32;
      } else if (!is_signed && size == 1) {
        *out = DType::kUInt8;
      } else {
        *name = Str(is_signed ? "int" : "uint", size * 8);
        return false;
      }
      break;
    }
    case H5T_FLOAT:
      if (size == 8 || size == 4) {
        *out = size == 8 ? DType::kFloat64 : DType::kFloat32;
      } else {
        *name = Str("float", size * 8);
        return false;
      }
      break;
    case H5T_STRING: *out = DType::kString; break;
    case H5T_ENUM: {
      // h5py's bool: FALSE = 0, TRUE = 1 over an 8-bit integer.
      char* n0 = H5Tget_member_name(type, 0);
      char* n1 = H5Tget_member_name(type, 1);
      bool is_bool = H5Tget_nmembers(type) == 2 && n0 != nullptr && n1 != nullptr && std::strcmp(n0, "FALSE") == 0 &&
                     std::strcmp(n1, "TRUE") == 0;
      H5free_memory(n0);
      H5free_memory(n1);
      H5Eclear2(H5E_DEFAULT);
      if (!is_bool) {
        *name = "enum";
        return false;
      }
      *out = DType::kBool;
      break;
    }
    case H5T_COMPOUND: *name = "compound"; return false;
    case H5T_ARRAY: *name = "array"; return false;
    case H5T_VLEN: *name = "variable-length sequence"; return false;
    case H5T_REFERENCE: *name = "reference"; return false;
    case H5T_OPAQUE: *name = "opaque"; return false;
    case H5T_BITFIELD: *name = "bitfield"; return false;
    default: *name = "unknown type"; return false;
  }
  *name = DTypeName(*out);
  return true;
}

Hid VarStringType() {
  Hid t(H5Tcopy(H5T_C_S1), H5Tclose);
  PC_ASSERT(t.valid() && H5Tset_size(t.get(), H5T_VARIABLE) >= 0 && H5Tset_cset(t.get(), H5T_CSET_UTF8) >= 0,
            LastError());
  return t;
}

Shape SpaceShape(hid_t space) {
  H5S_class_t cls = H5Sget_simple_extent_type(space);
  if (cls == H5S_NULL) return Shape{0};
  if (cls == H5S_SCALAR) return Shape{};
  int rank = H5Sget_simple_extent_ndims(space);
  PC_ASSERT(rank >= 0, LastError());
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  return Shape(dims.begin(), dims.end());
}

void CheckOpen(const FileState& file, const std::string& where, const std::string& action, bool write) {
  PC_CHECK(file.open, where, ": cannot ", action, ": the file was closed (File::Close or StagedWriter::Commit)");
  PC_CHECK(!write || file.writable, where, ": cannot ", action, ": the file is open for reading only");
}

Hid OpenGroupAt(const FileState& file, const std::string& path, const std::string& where) {
  Hid g(H5Gopen2(file.id, path.c_str(), H5P_DEFAULT), H5Gclose);
  PC_CHECK(g.valid(), where, ": cannot open the group: ", LastError());
  return g;
}

Hid GroupCreatePlist() {
  Hid p(H5Pcreate(H5P_GROUP_CREATE), H5Pclose);
  unsigned flags = H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED;
  PC_ASSERT(
      p.valid() && H5Pset_link_creation_order(p.get(), flags) >= 0 && H5Pset_attr_creation_order(p.get(), flags) >= 0,
      LastError());
  // Keep small attributes in the object header (compact storage) beyond HDF5's default of 8:
  // HDF5 1.10.8's H5Ocopy (CopyGroup) segfaults copying a group whose attributes are in dense
  // storage with creation order tracked and a variable-length string among them.
  PC_ASSERT(H5Pset_attr_phase_change(p.get(), kMaxCompactAttributes, kMaxCompactAttributes) >= 0, LastError());
  return p;
}

std::string NameList(const std::vector<std::string>& names) {
  if (names.empty()) return "none";
  std::string out;
  for (size_t i = 0; i < names.size() && i < 20; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > 20) out += Str(", ... (", names.size(), " in all)");
  return out;
}

void CheckName(const std::string& where, const char* what, const std::string& name) {
  PC_CHECK(!name.empty(), where, ": empty ", what, " name");
  PC_CHECK(name.find('/') == std::string::npos && name != "." && name.find('\0') == std::string::npos, where,
           ": invalid ", what, " name '", name, "': expected one path component (no '/', not '.')");
  size_t bad = FindInvalidUtf8(name);
  PC_CHECK(bad == std::string::npos, where, ": ", what, " name is not valid UTF-8 (byte offset ", bad, ")");
}

void CheckStrings(const std::string& where, const std::string& what, const std::string* values, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    const std::string& v = values[i];
    size_t nul = v.find('\0');
    PC_CHECK(nul == std::string::npos, where, ": ", what, ": string ", i, " contains a NUL byte at offset ", nul,
             " (strings are stored as variable-length UTF-8)");
    size_t bad = FindInvalidUtf8(v);
    PC_CHECK(bad == std::string::npos, where, ": ", what, ": string ", i, " is not valid UTF-8 (byte offset ", bad,
             ")");
  }
}

bool ReadStrings(hid_t obj, bool is_attribute, hid_t stored, size_t count, std::vector<std::string>* out,
                 std::string* error) {
  out->clear();
  if (count == 0) return true;
  Hid mem(H5Tget_native_type(stored, H5T_DIR_ASCEND), H5Tclose);
  if (!mem.valid()) {
    *error = LastError();
    return false;
  }
  auto read = [&](void* buf) {
    herr_t r =
        is_attribute ? H5Aread(obj, mem.get(), buf) : H5Dread(obj, mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
    if (r < 0) *error = LastError();
    return r >= 0;
  };
  out->reserve(count);
  if (H5Tis_variable_str(stored) > 0) {
    std::vector<char*> ptrs(count, nullptr);
    if (!read(ptrs.data())) return false;
    for (char* p : ptrs) out->emplace_back(p != nullptr ? p : "");
    hsize_t n = count;
    Hid space(H5Screate_simple(1, &n, nullptr), H5Sclose);
    H5Dvlen_reclaim(mem.get(), space.get(), H5P_DEFAULT, ptrs.data());
    return true;
  }
  size_t size = H5Tget_size(stored);
  std::vector<char> buf(count * size);
  if (!read(buf.data())) return false;
  bool space_pad = H5Tget_strpad(stored) == H5T_STR_SPACEPAD;
  for (size_t i = 0; i < count; ++i) {
    const char* p = buf.data() + i * size;
    size_t len = 0;
    while (len < size && p[len] != '\0') ++len;
    while (space_pad && len > 0 && p[len - 1] == ' ') --len;
    out->emplace_back(p, len);
  }
  return true;
}

}  // namespace detail
}  // namespace pc::store
