// Group attributes: scalars (string, int64, double, bool) and 1-D vectors (double, int64, string).
#include "core/error.h"
#include "store/group.h"
#include "store/h5_internal.h"

namespace pc::store {
using detail::Hid;
using detail::LastError;

namespace {

herr_t CollectAttr(hid_t /*obj*/, const char* name, const H5A_info_t* /*info*/, void* data) {
  static_cast<std::vector<std::string>*>(data)->emplace_back(name);
  return 0;
}

// h5py's bool: an enum FALSE = 0, TRUE = 1 over int8.
Hid BoolType() {
  Hid t(H5Tenum_create(H5T_NATIVE_INT8), H5Tclose);
  int8_t no = 0, yes = 1;
  PC_ASSERT(t.valid() && H5Tenum_insert(t.get(), "FALSE", &no) >= 0 && H5Tenum_insert(t.get(), "TRUE", &yes) >= 0,
            LastError());
  return t;
}

Hid ScalarSpace() { return Hid(H5Screate(H5S_SCALAR), H5Sclose); }

Hid VectorSpace(size_t n) {
  if (n == 0) return Hid(H5Screate(H5S_NULL), H5Sclose);  // h5py: h5py.Empty
  hsize_t dims = n;
  return Hid(H5Screate_simple(1, &dims, nullptr), H5Sclose);
}

// An attribute opened for reading, with what it holds.
struct OpenAttr {
  Hid attr, type, space;
  std::string type_name;
  DType dtype = DType::kFloat64;
  bool known = false;  // dtype is valid
  Shape shape;
  int64_t count = 0;
};

// Writes `name` (replacing an existing attribute) with `file_type` over `space` from `buf`.
void WriteAttr(const Group& group, const detail::FileState& file, const std::string& name, hid_t file_type,
               hid_t mem_type, hid_t space, const void* buf) {
  std::string where = group.Where();
  detail::CheckName(where, "attribute", name);
  detail::CheckOpen(file, where, Str("write attribute '", name, "'"), true);
  Hid g = detail::OpenGroupAt(file, group.path(), where);
  htri_t exists = H5Aexists(g.get(), name.c_str());
  PC_CHECK(exists >= 0, where, ": cannot write attribute '", name, "': ", LastError());
  if (exists > 0) {
    PC_CHECK(H5Adelete(g.get(), name.c_str()) >= 0, where, ": cannot replace attribute '", name, "': ", LastError());
  }
  Hid attr(H5Acreate2(g.get(), name.c_str(), file_type, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  PC_CHECK(attr.valid(), where, ": cannot write attribute '", name, "': ", LastError());
  if (H5Sget_simple_extent_type(space) != H5S_NULL) {
    PC_CHECK(H5Awrite(attr.get(), mem_type, buf) >= 0, where, ": cannot write attribute '", name, "': ", LastError());
  }
  PC_CHECK(attr.Close() >= 0, where, ": cannot write attribute '", name, "': ", LastError());
}

OpenAttr OpenForRead(const Group& group, const detail::FileState& file, const std::string& name) {
  std::string where = group.Where();
  detail::CheckOpen(file, where, Str("read attribute '", name, "'"), false);
  PC_CHECK(group.HasAttr(name), where, ": no attribute '", name, "' (attributes: ", detail::NameList(group.AttrNames()),
           ")");
  Hid g = detail::OpenGroupAt(file, group.path(), where);
  OpenAttr a;
  a.attr = Hid(H5Aopen(g.get(), name.c_str(), H5P_DEFAULT), H5Aclose);
  PC_CHECK(a.attr.valid(), where, ": cannot read attribute '", name, "': ", LastError());
  a.type = Hid(H5Aget_type(a.attr.get()), H5Tclose);
  a.space = Hid(H5Aget_space(a.attr.get()), H5Sclose);
  PC_CHECK(a.type.valid() && a.space.valid(), where, ": cannot read attribute '", name, "': ", LastError());
  a.known = detail::ClassifyType(a.type.get(), &a.dtype, &a.type_name);
  a.shape = detail::SpaceShape(a.space.get());
  a.count = NumElements(a.shape);
  return a;
}

void Expect(const Group& group, const std::string& name, const OpenAttr& a, bool type_ok, const char* wanted,
            bool scalar) {
  PC_CHECK(type_ok, group.Where(), ": attribute '", name, "' holds ", a.type_name, ", expected ", wanted);
  if (scalar) {
    PC_CHECK(a.count == 1, group.Where(), ": attribute '", name, "' holds ", a.count, " values ", ShapeString(a.shape),
             ", expected one ", wanted);
  } else {
    PC_CHECK(a.shape.size() <= 1, group.Where(), ": attribute '", name, "' has shape ", ShapeString(a.shape),
             ", expected a 1-D array of ", wanted);
  }
}

bool IsClass(const OpenAttr& a, H5T_class_t cls) { return H5Tget_class(a.type.get()) == cls; }

template <typename T>
std::vector<T> ReadNumbers(const Group& group, const std::string& name, const OpenAttr& a, hid_t mem) {
  std::vector<T> out(static_cast<size_t>(a.count));
  if (!out.empty()) {
    PC_CHECK(H5Aread(a.attr.get(), mem, out.data()) >= 0, group.Where(), ": cannot read attribute '", name,
             "': ", LastError());
  }
  return out;
}

std::vector<std::string> ReadStringValues(const Group& group, const std::string& name, const OpenAttr& a) {
  std::vector<std::string> out;
  std::string error;
  PC_CHECK(detail::ReadStrings(a.attr.get(), true, a.type.get(), static_cast<size_t>(a.count), &out, &error),
           group.Where(), ": cannot read attribute '", name, "': ", error);
  return out;
}

}  // namespace

// ---- writing ----

void Group::SetAttr(const std::string& name, const std::string& value) const {
  detail::CheckStrings(Where(), Str("attribute '", name, "'"), &value, 1);
  Hid type = detail::VarStringType();
  Hid space = ScalarSpace();
  const char* ptr = value.c_str();
  WriteAttr(*this, *file_, name, type.get(), type.get(), space.get(), &ptr);
}

void Group::SetAttr(const std::string& name, double value) const {
  Hid space = ScalarSpace();
  WriteAttr(*this, *file_, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, space.get(), &value);
}

void Group::SetAttr(const std::string& name, bool value) const {
  Hid type = BoolType();
  Hid space = ScalarSpace();
  int8_t v = value ? 1 : 0;
  WriteAttr(*this, *file_, name, type.get(), type.get(), space.get(), &v);
}

void Group::SetIntAttr(const std::string& name, int64_t value, bool overflow) const {
  PC_CHECK(!overflow, Where(), ": attribute '", name, "': value does not fit in int64");
  Hid space = ScalarSpace();
  WriteAttr(*this, *file_, name, H5T_STD_I64LE, H5T_NATIVE_INT64, space.get(), &value);
}

void Group::SetAttr(const std::string& name, const std::vector<double>& values) const {
  Hid space = VectorSpace(values.size());
  WriteAttr(*this, *file_, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, space.get(), values.data());
}

void Group::SetAttr(const std::string& name, const std::vector<int64_t>& values) const {
  Hid space = VectorSpace(values.size());
  WriteAttr(*this, *file_, name, H5T_STD_I64LE, H5T_NATIVE_INT64, space.get(), values.data());
}

void Group::SetAttr(const std::string& name, const std::vector<std::string>& values) const {
  detail::CheckStrings(Where(), Str("attribute '", name, "'"), values.data(), values.size());
  Hid type = detail::VarStringType();
  Hid space = VectorSpace(values.size());
  std::vector<const char*> ptrs;
  ptrs.reserve(values.size());
  for (const std::string& v : values) ptrs.push_back(v.c_str());
  WriteAttr(*this, *file_, name, type.get(), type.get(), space.get(), ptrs.data());
}

// ---- listing ----

bool Group::HasAttr(const std::string& name) const {
  detail::CheckOpen(*file_, Where(), Str("read attribute '", name, "'"), false);
  Hid g = detail::OpenGroupAt(*file_, path_, Where());
  htri_t exists = H5Aexists(g.get(), name.c_str());
  PC_CHECK(exists >= 0, Where(), ": cannot look up attribute '", name, "': ", LastError());
  return exists > 0;
}

std::vector<std::string> Group::AttrNames(Order order) const {
  detail::CheckOpen(*file_, Where(), "list attributes", false);
  Hid g = detail::OpenGroupAt(*file_, path_, Where());
  std::vector<std::string> names;
  hsize_t idx = 0;
  if (order == Order::kCreation &&
      H5Aiterate2(g.get(), H5_INDEX_CRT_ORDER, H5_ITER_INC, &idx, CollectAttr, &names) >= 0) {
    return names;
  }
  H5Eclear2(H5E_DEFAULT);  // creation order not tracked: name order
  names.clear();
  idx = 0;
  PC_CHECK(H5Aiterate2(g.get(), H5_INDEX_NAME, H5_ITER_INC, &idx, CollectAttr, &names) >= 0, Where(),
           ": cannot list attributes: ", LastError());
  return names;
}

DType Group::AttrType(const std::string& name) const {
  OpenAttr a = OpenForRead(*this, *file_, name);
  PC_CHECK(a.known, Where(), ": attribute '", name, "' holds ", a.type_name, ", which the store does not read");
  return a.dtype;
}

// ---- reading ----

template <>
std::string Group::GetAttr<std::string>(const std::string& name) const {
  OpenAttr a = OpenForRead(*this, *file_, name);
  Expect(*this, name, a, IsClass(a, H5T_STRING), "string", true);
  return ReadStringValues(*this, name, a).at(0);
}

template <>
int64_t Group::GetAttr<int64_t>(const std::string& name) const {
  OpenAttr a = OpenForRead(*this, *file_, name);
  Expect(*this, name, a, IsClass(a, H5T_INTEGER), "int64", true);
  return ReadNumbers<int64_t>(*this, name, a, H5T_NATIVE_INT64).at(0);
}

template <>
double Group::GetAttr<double>(const std::string& name) const {
  OpenAttr a = OpenForRead(*this, *file_, name);
  Expect(*this, name, a, IsClass(a, H5T_FLOAT), "float64", true);
  return ReadNumbers<double>(*this, name, a, H5T_NATIVE_DOUBLE).at(0);
}

template <>
bool Group::GetAttr<bool>(const std::string& name) const {
  OpenAttr a = OpenForRead(*this, *file_, name);
  Expect(*this, name, a, a.known && a.dtype == DType::kBool && H5Tget_size(a.type.get()) == 1, "bool", true);
  Hid mem(H5Tget_native_type(a.type.get(), H5T_DIR_ASCEND), H5Tclose);
  int8_t v = 0;
  PC_CHECK(mem.valid() && H5Aread(a.attr.get(), mem.get(), &v) >= 0, Where(), ": cannot read attribute '", name,
           "': ", LastError());
  return v != 0;
}

template <>
std::vector<double> Group::GetAttr<std::vector<double>>(const std::string& name) const {
  OpenAttr a = OpenForRead(*this, *file_, name);
  Expect(*this, name, a, IsClass(a, H5T_FLOAT), "float64", false);
  return ReadNumbers<double>(*this, name, a, H5T_NATIVE_DOUBLE);
}

template <>
std::vector<int64_t> Group::GetAttr<std::vector<int64_t>>(const std::string& name) const {
  OpenAttr a = OpenForRead(*this, *file_, name);
  Expect(*this, name, a, IsClass(a, H5T_INTEGER), "int64", false);
  return ReadNumbers<int64_t>(*this, name, a, H5T_NATIVE_INT64);
}

template <>
std::vector<std::string> Group::GetAttr<std::vector<std::string>>(const std::string& name) const {
  OpenAttr a = OpenForRead(*this, *file_, name);
  Expect(*this, name, a, IsClass(a, H5T_STRING), "string", false);
  return ReadStringValues(*this, name, a);
}

}  // namespace pc::store
