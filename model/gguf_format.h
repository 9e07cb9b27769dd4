// model/gguf_format.h — llama.cpp's GGUF files, parsed and validated without LibTorch (fuzzed:
// tests/fuzz/fuzz_gguf_header.cc). Dequantization: model/gguf_quants.h; conversion to a Hugging
// Face folder: model/gguf_convert.h.
//
// Format (little-endian; versions 1, 2, 3): "GGUF", u32 version, tensor count, metadata count,
// then the metadata {string key, u32 value type, value}, then per tensor {string name, u32 n_dims,
// n_dims dimensions (ne[0] first, the fastest-varying one), u32 ggml type, u64 offset}, then padding
// to general.alignment (default 32), then the data; tensor offsets are relative to the data and
// multiples of the alignment. Counts, string lengths, array lengths and dimensions are u64 from
// version 2 on and u32 in version 1. A string is {length, bytes}; an array is {u32 element type,
// count, elements}, arrays of arrays included.
//
// Everything in the header is hostile input: every count and length is checked against the bytes
// that remain before anything is allocated for it; dimensions, sizes and offsets are overflow-
// checked; every tensor's bytes lie inside the data, aligned, with no two tensors sharing bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace pc {

// ggml's tensor types, numbered as in the file.
enum class GgmlType : uint32_t {
  kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ5_0 = 6, kQ5_1 = 7, kQ8_0 = 8, kQ8_1 = 9,
  kQ2_K = 10, kQ3_K = 11, kQ4_K = 12, kQ5_K = 13, kQ6_K = 14, kQ8_K = 15,
  kIQ2_XXS = 16, kIQ2_XS = 17, kIQ3_XXS = 18, kIQ1_S = 19, kIQ4_NL = 20, kIQ3_S = 21, kIQ2_S = 22,
  kIQ4_XS = 23, kI8 = 24, kI16 = 25, kI32 = 26, kI64 = 27, kF64 = 28, kIQ1_M = 29, kBF16 = 30,
  kTQ1_0 = 34, kTQ2_0 = 35, kMXFP4 = 39,
};

struct GgmlTypeInfo {
  GgmlType type;
  const char* name;     // "Q4_K"
  int block_size;       // elements per block
  int type_size;        // bytes per block
  bool dequantizable;   // perpcomp converts it to f32 (model/gguf_quants.h)
};
// nullptr for a number that is no ggml type (or a removed one, 4 and 5).
const GgmlTypeInfo* FindGgmlType(uint32_t number);
const GgmlTypeInfo& GgmlInfo(GgmlType type);
const char* GgmlTypeName(GgmlType type);
// "F32, F16, BF16, Q8_0, ..." — the types perpcomp dequantizes, for messages.
std::string DequantizableTypeNames();

enum class GgufType : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7, kString = 8,
  kArray = 9, kU64 = 10, kI64 = 11, kF64 = 12,
};
const char* GgufTypeName(GgufType type);  // "uint32", "array", ...

// One metadata value. Scalars: `u` (unsigned and bool), `i` (signed) or `f` (floats), by type.
// Arrays: `elem` and `count`, and the elements in `strings` (strings), `arrays` (arrays) or `raw`
// (numbers and bools: `count` little-endian elements of the element type's size).
struct GgufValue {
  GgufType type = GgufType::kU8;
  uint64_t u = 0;
  int64_t i = 0;
  double f = 0;
  std::string str;
  GgufType elem = GgufType::kU8;
  uint64_t count = 0;
  std::vector<std::string> strings;
  std::vector<GgufValue> arrays;
  std::string raw;

  bool IsInteger() const;  // u8 .. i64 (not bool)
  bool IsNumber() const;   // integer or float
  bool IsArrayOf(GgufType t) const { return type == GgufType::kArray && elem == t; }
  // Element k of a number/bool array as int64 (throws for u64 values beyond int64) or double.
  int64_t IntAt(uint64_t k, const std::string& where) const;
  double FloatAt(uint64_t k) const;
  std::string Describe() const;  // "uint32 30", "array[string] of 49152", for messages
};

struct GgufTensorInfo {
  std::string name;
  GgmlType type = GgmlType::kF32;
  std::vector<int64_t> ne;    // ggml order: ne[0] is the fastest-varying (row length)
  uint64_t offset = 0;        // relative to the data section
  uint64_t bytes = 0;         // elements / block_size * type_size
  int64_t elements = 0;
  // Row-major shape (ne reversed): an HF linear weight (out, in) is ne = [in, out].
  std::vector<int64_t> Shape() const { return {ne.rbegin(), ne.rend()}; }
};

struct GgufHeader {
  uint32_t version = 0;
  uint64_t alignment = 32;
  uint64_t data_offset = 0;  // file offset of the data section
  uint64_t data_size = 0;
  std::vector<std::pair<std::string, GgufValue>> metadata;  // in file order, keys unique
  std::map<std::string, size_t> metadata_index;
  std::vector<GgufTensorInfo> tensors;  // in file order, names unique
  std::map<std::string, size_t> tensor_index;

  const GgufValue* Find(const std::string& key) const;
  const GgufTensorInfo* FindTensor(const std::string& name) const;
};

// Parses and validates the header of a GGUF file held in `bytes` (the whole file: the data
// section is checked too). `where` names the file in errors. Errors name the field, key or
// tensor, its byte offset, and what was expected.
GgufHeader ParseGgufHeader(const uint8_t* bytes, uint64_t size, const std::string& where);

// A GGUF file mapped read-only, its header parsed.
class GgufFile {
 public:
  static std::unique_ptr<GgufFile> Open(const std::string& path);
  ~GgufFile();
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  const std::string& path() const { return path_; }
  const GgufHeader& header() const { return header_; }
  const uint8_t* TensorBytes(const GgufTensorInfo& t) const { return map_ + header_.data_offset + t.offset; }
  // Typed metadata access; errors name the file, the key, its type and what was expected.
  const GgufValue* Find(const std::string& key) const { return header_.Find(key); }
  std::string String(const std::string& key) const;                  // required string
  std::string StringOr(const std::string& key, const std::string& fallback) const;
  int64_t Int(const std::string& key) const;                          // required integer
  int64_t IntOr(const std::string& key, int64_t fallback) const;
  double Float(const std::string& key) const;                         // required number
  double FloatOr(const std::string& key, double fallback) const;
  bool BoolOr(const std::string& key, bool fallback) const;
  // Dequantizes (or widens) a tensor to f32 into `out` (tensor.elements floats); types without
  // f32 conversion are an error naming the type and the tensor. Pages are dropped behind the read.
  void ReadF32(const GgufTensorInfo& tensor, float* out) const;
  // The tensor's bytes as stored (F16/BF16 copied as they are).
  void ReadRaw(const GgufTensorInfo& tensor, void* out) const;

 private:
  GgufFile() = default;
  void DropPages(uint64_t begin, uint64_t end) const;  // file offsets
  std::string path_;
  int fd_ = -1;
  uint8_t* map_ = nullptr;
  uint64_t file_size_ = 0;
  GgufHeader header_;
};

}  // namespace pc
