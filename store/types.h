// store/types.h — element types, shapes and write options of the HDF5 store (docs/HDF5.md).
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace pc::store {

// Element types of datasets, table columns and attributes; the names are numpy's.
// kBool is for attributes only (stored as h5py's bool: an int8 enum FALSE/TRUE);
// use uint8 for boolean arrays.
enum class DType { kFloat64, kFloat32, kInt64, kInt32, kUInt8, kString, kBool };
const char* DTypeName(DType type);  // "float64", "float32", "int64", "int32", "uint8", "string", "bool"

// The dataset element types: double, float, int64_t, int32_t, uint8_t, std::string.
template <typename T>
inline constexpr bool kIsElement =
    std::is_same_v<T, double> || std::is_same_v<T, float> || std::is_same_v<T, int64_t> || std::is_same_v<T, int32_t> ||
    std::is_same_v<T, uint8_t> || std::is_same_v<T, std::string>;

template <typename T>
constexpr DType DTypeOf() {
  static_assert(kIsElement<T>, "store: element type must be double, float, int64_t, int32_t, uint8_t or std::string");
  if constexpr (std::is_same_v<T, double>) return DType::kFloat64;
  if constexpr (std::is_same_v<T, float>) return DType::kFloat32;
  if constexpr (std::is_same_v<T, int64_t>) return DType::kInt64;
  if constexpr (std::is_same_v<T, int32_t>) return DType::kInt32;
  if constexpr (std::is_same_v<T, uint8_t>) return DType::kUInt8;
  return DType::kString;
}

// A dataset's shape, outermost dimension first (row-major, as numpy). In expected shapes
// passed to readers, -1 matches any extent.
using Shape = std::vector<int64_t>;
std::string ShapeString(const Shape& shape);  // "[3, 4]"
int64_t NumElements(const Shape& shape);      // product; 1 for rank 0

// How a dataset is laid out. Default: contiguous, uncompressed (small arrays, fastest).
// Per-token arrays (millions of values) should use Compressed(): chunked, byte-shuffled,
// gzip; h5py and h5dump read them with no plugin.
struct WriteOptions {
  int gzip_level = 0;              // 0: none; 1..9: deflate (implies chunking and shuffle)
  Shape chunk;                     // chunk shape (same rank); empty: about 1 MiB chunks along dim 0
  int64_t compress_min_bytes = 0;  // arrays smaller than this stay contiguous and uncompressed

  // gzip `level`, automatic chunks, arrays under 64 KiB left contiguous.
  static WriteOptions Compressed(int level = 4) {
    WriteOptions o;
    o.gzip_level = level;
    o.compress_min_bytes = 64 << 10;
    return o;
  }
};

// An N-D array read back: values in row-major order, values.size() == NumElements(shape).
template <typename T>
struct Array {
  Shape shape;
  std::vector<T> values;
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t size() const { return static_cast<int64_t>(values.size()); }
};

// What a dataset holds (Group::Info).
struct DatasetInfo {
  DType dtype = DType::kFloat64;
  Shape shape;
};

}  // namespace pc::store
