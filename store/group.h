// store/group.h — a group of an open HDF5 file: child groups, attributes, datasets, tables.
//
// A Group is a light reference (the file and an absolute path such as "/runs/awq"); it is
// cheap to copy and opens the HDF5 object for each call, so no HDF5 id outlives a call.
// Using a Group after its file was closed (File::Close, StagedWriter::Commit) throws.
//
// Names of children and attributes are single path components (no '/', not "." or "").
// Readers (Open*, Has, Read*, Info) also accept relative paths "a/b/c".
// Every error is a pc::Error that starts with "<file>:<group path>: ".
//
// Not thread-safe: the serial HDF5 library must be used from one thread at a time; the
// store is used from the main thread only (docs/HDF5.md).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "store/table.h"
#include "store/types.h"

namespace pc::store {

namespace detail {
struct FileState;
}

enum class Order { kCreation, kName };  // kCreation falls back to kName for groups not tracking it
enum class ChildKind { kMissing, kGroup, kDataset, kOther };

class Group {
 public:
  const std::string& path() const { return path_; }  // "/" for the root
  const std::string& file_path() const;              // as given to File (the final path when staged)
  std::string Where() const;                         // "<file>:<path>", the prefix of error messages

  // ---- child groups ----
  Group CreateGroup(const std::string& name) const;  // error if `name` exists
  Group OpenGroup(const std::string& name) const;    // error if missing or not a group
  bool Has(const std::string& name) const;           // any child (group, dataset, ...)
  ChildKind Kind(const std::string& name) const;
  bool IsGroup(const std::string& name) const { return Kind(name) == ChildKind::kGroup; }
  bool IsDataset(const std::string& name) const { return Kind(name) == ChildKind::kDataset; }
  bool IsTable(const std::string& name) const;                                // a group written by WriteTable
  std::vector<std::string> List(Order order = Order::kCreation) const;        // all children
  std::vector<std::string> ListGroups(Order order = Order::kCreation) const;  // child groups only

  // ---- attributes (replaced when they exist) ----
  void SetAttr(const std::string& name, const std::string& value) const;
  void SetAttr(const std::string& name, const char* value) const { SetAttr(name, std::string(value)); }
  void SetAttr(const std::string& name, double value) const;
  void SetAttr(const std::string& name, bool value) const;
  template <typename T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  void SetAttr(const std::string& name, T value) const {
    if constexpr (std::is_unsigned_v<T> && sizeof(T) >= sizeof(int64_t)) {
      SetIntAttr(name, static_cast<int64_t>(value), value > static_cast<uint64_t>(INT64_MAX));
    } else {
      SetIntAttr(name, static_cast<int64_t>(value), false);
    }
  }
  void SetAttr(const std::string& name, const std::vector<double>& values) const;
  void SetAttr(const std::string& name, const std::vector<int64_t>& values) const;
  void SetAttr(const std::string& name, const std::vector<std::string>& values) const;

  bool HasAttr(const std::string& name) const;
  std::vector<std::string> AttrNames(Order order = Order::kCreation) const;
  DType AttrType(const std::string& name) const;  // error for types outside DType
  // T: std::string, int64_t, double, bool, std::vector<double|int64_t|std::string>.
  // int64_t reads any integer attribute, double any float attribute; a scalar read wants
  // exactly one value; errors name the attribute, the stored and the wanted type.
  template <typename T>
  T GetAttr(const std::string& name) const {
    static_assert(sizeof(T) == 0,
                  "store::Group::GetAttr: T must be std::string, int64_t, double, bool or "
                  "std::vector<double|int64_t|std::string>");
    return T();
  }
  // The attribute, or `fallback` when it is absent (a wrong type is still an error).
  template <typename T>
  T GetAttrOr(const std::string& name, const T& fallback) const {
    return HasAttr(name) ? GetAttr<T>(name) : fallback;
  }

  // ---- datasets (never replaced: writing an existing name is an error) ----
  // `values` is row-major with NumElements(shape) entries; rank >= 1.
  template <typename T>
  void WriteArray(const std::string& name, const T* values, const Shape& shape,
                  const WriteOptions& options = {}) const {
    WriteRaw(name, DTypeOf<T>(), values, shape, options);
  }
  template <typename T>
  void WriteArray(const std::string& name, const std::vector<T>& values, const Shape& shape,
                  const WriteOptions& options = {}) const {
    CheckCount(name, static_cast<int64_t>(values.size()), shape);
    WriteArray(name, values.data(), shape, options);
  }
  // 1-D; also std::vector<std::string> (variable-length UTF-8).
  template <typename T>
  void WriteVector(const std::string& name, const std::vector<T>& values, const WriteOptions& options = {}) const {
    WriteArray(name, values.data(), Shape{static_cast<int64_t>(values.size())}, options);
  }

  DatasetInfo Info(const std::string& name) const;
  // Checks the element type exactly (a float32 dataset is not read as double) and, when
  // `expected` is given, the shape (-1 matches any extent).
  template <typename T>
  Array<T> ReadArray(const std::string& name, const Shape& expected = {}) const {
    Array<T> out;
    ReadRaw(name, DTypeOf<T>(), expected, &out.shape, [&out](size_t n) -> void* {
      out.values.resize(n);
      return out.values.data();
    });
    return out;
  }
  // 1-D only; `expected_size` >= 0 checks the length.
  template <typename T>
  std::vector<T> ReadVector(const std::string& name, int64_t expected_size = -1) const {
    return ReadArray<T>(name, Shape{expected_size}).values;
  }

  // ---- tables (store/table.h) ----
  // Writes `table` as group `name` (one dataset per column); returns it (for attributes).
  Group WriteTable(const std::string& name, const Table& table, const WriteOptions& options = {}) const;
  // Reads all columns listed in the `columns` attribute, or only `columns` when given.
  // Datasets of the group not listed there are ignored (append-only evolution).
  Table ReadTable(const std::string& name, const std::vector<std::string>& columns = {}) const;

 private:
  friend class File;
  friend void CopyGroup(const Group&, const std::string&, const Group&, const std::string&);
  Group(std::shared_ptr<detail::FileState> file, std::string path);
  void SetIntAttr(const std::string& name, int64_t value, bool overflow) const;
  void CheckCount(const std::string& name, int64_t count, const Shape& shape) const;
  // `values`: const T* of the C++ type of `type` (std::string for kString).
  void WriteRaw(const std::string& name, DType type, const void* values, const Shape& shape,
                const WriteOptions& options) const;
  // Checks type and shape, then reads into alloc(n) (T* of the C++ type of `type`).
  void ReadRaw(const std::string& name, DType type, const Shape& expected, Shape* shape,
               const std::function<void*(size_t)>& alloc) const;
  std::string ChildPath(const std::string& name) const;

  std::shared_ptr<detail::FileState> file_;
  std::string path_;
};

// Attribute types (defined in store/attributes.cc).
template <>
std::string Group::GetAttr<std::string>(const std::string& name) const;
template <>
int64_t Group::GetAttr<int64_t>(const std::string& name) const;
template <>
double Group::GetAttr<double>(const std::string& name) const;
template <>
bool Group::GetAttr<bool>(const std::string& name) const;
template <>
std::vector<double> Group::GetAttr<std::vector<double>>(const std::string& name) const;
template <>
std::vector<int64_t> Group::GetAttr<std::vector<int64_t>>(const std::string& name) const;
template <>
std::vector<std::string> Group::GetAttr<std::vector<std::string>>(const std::string& name) const;

}  // namespace pc::store
