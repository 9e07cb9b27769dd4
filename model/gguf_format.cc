#include "model/gguf_format.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/text.h"
#include "model/gguf_quants.h"

namespace pc {
namespace {

// block size, bytes per block: gguf's GGML_QUANT_SIZES.
constexpr GgmlTypeInfo kGgmlTypes[] = {
    {GgmlType::kF32, "F32", 1, 4, true},          {GgmlType::kF16, "F16", 1, 2, true},
    {GgmlType::kQ4_0, "Q4_0", 32, 18, true},      {GgmlType::kQ4_1, "Q4_1", 32, 20, true},
    {GgmlType::kQ5_0, "Q5_0", 32, 22, true},      {GgmlType::kQ5_1, "Q5_1", 32, 24, true},
    {GgmlType::kQ8_0, "Q8_0", 32, 34, true},      {GgmlType::kQ8_1, "Q8_1", 32, 40, false},
    {GgmlType::kQ2_K, "Q2_K", 256, 84, true},     {GgmlType::kQ3_K, "Q3_K", 256, 110, true},
    {GgmlType::kQ4_K, "Q4_K", 256, 144, true},    {GgmlType::kQ5_K, "Q5_K", 256, 176, true},
    {GgmlType::kQ6_K, "Q6_K", 256, 210, true},    {GgmlType::kQ8_K, "Q8_K", 256, 292, false},
    {GgmlType::kIQ2_XXS, "IQ2_XXS", 256, 66, false}, {GgmlType::kIQ2_XS, "IQ2_XS", 256, 74, false},
    {GgmlType::kIQ3_XXS, "IQ3_XXS", 256, 98, false}, {GgmlType::kIQ1_S, "IQ1_S", 256, 50, false},
    {GgmlType::kIQ4_NL, "IQ4_NL", 32, 18, false}, {GgmlType::kIQ3_S, "IQ3_S", 256, 110, false},
    {GgmlType::kIQ2_S, "IQ2_S", 256, 82, false},  {GgmlType::kIQ4_XS, "IQ4_XS", 256, 136, false},
    {GgmlType::kI8, "I8", 1, 1, false},           {GgmlType::kI16, "I16", 1, 2, false},
    {GgmlType::kI32, "I32", 1, 4, false},         {GgmlType::kI64, "I64", 1, 8, false},
    {GgmlType::kF64, "F64", 1, 8, false},         {GgmlType::kIQ1_M, "IQ1_M", 256, 56, false},
    {GgmlType::kBF16, "BF16", 1, 2, true},        {GgmlType::kTQ1_0, "TQ1_0", 256, 54, false},
    {GgmlType::kTQ2_0, "TQ2_0", 256, 66, false},  {GgmlType::kMXFP4, "MXFP4", 32, 17, false},
};

struct ValueTypeRow {
  GgufType type;
  const char* name;
  int size;  // bytes of a scalar; 0 for string and array
};
constexpr ValueTypeRow kValueTypes[] = {
    {GgufType::kU8, "uint8", 1},   {GgufType::kI8, "int8", 1},     {GgufType::kU16, "uint16", 2},
    {GgufType::kI16, "int16", 2},  {GgufType::kU32, "uint32", 4},  {GgufType::kI32, "int32", 4},
    {GgufType::kF32, "float32", 4}, {GgufType::kBool, "bool", 1},  {GgufType::kString, "string", 0},
    {GgufType::kArray, "array", 0}, {GgufType::kU64, "uint64", 8}, {GgufType::kI64, "int64", 8},
    {GgufType::kF64, "float64", 8},
};

constexpr uint32_t kMaxDims = 4;          // GGML_MAX_DIMS
constexpr int kMaxArrayDepth = 8;         // arrays of arrays: deeper nesting is refused
constexpr uint64_t kMaxNameBytes = 65535; // keys and tensor names

const ValueTypeRow* FindValueType(uint32_t number) {
  for (const auto& r : kValueTypes) {
    if (static_cast<uint32_t>(r.type) == number) return &r;
  }
  return nullptr;
}

uint64_t LoadLE(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int k = n - 1; k >= 0; --k) v = (v << 8) | p[k];
  return v;
}

// Reads the header front to back; every read checks the bytes that remain first.
class Reader {
 public:
  Reader(const uint8_t* p, uint64_t size, const std::string& where) : p_(p), size_(size), where_(where) {}

  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return size_ - pos_; }
  void set_version(uint32_t v) { version_ = v; }
  // Width of counts, lengths and dimensions: 4 bytes in version 1, 8 after.
  int count_bytes() const { return version_ == 1 ? 4 : 8; }

  void Need(uint64_t n, const std::string& what) const {
    PC_CHECK(n <= remaining(), where_, ": truncated header: ", what, " at byte ", pos_, " needs ", n,
             " bytes, but the file has ", remaining(), " left (file size ", size_, ")");
  }
  uint64_t Uint(int n, const std::string& what) {
    Need(n, what);
    uint64_t v = LoadLE(p_ + pos_, n);
    pos_ += n;
    return v;
  }
  uint32_t U32(const std::string& what) { return static_cast<uint32_t>(Uint(4, what)); }
  uint64_t Count(const std::string& what) { return Uint(count_bytes(), what); }
  std::string Bytes(uint64_t n, const std::string& what) {
    Need(n, what);
    std::string s(reinterpret_cast<const char*>(p_ + pos_), n);
    pos_ += n;
    return s;
  }
  std::string String(const std::string& what) {
    const uint64_t at = pos_;
    uint64_t n = Count(what + " length");
    PC_CHECK(n <= remaining(), where_, ": ", what, " at byte ", at, " has length ", n, ", but the file has ",
             remaining(), " bytes left (truncated or corrupt header)");
    return Bytes(n, what);
  }
  // A key or tensor name: non-empty valid UTF-8 of at most kMaxNameBytes.
  std::string Name(const std::string& what) {
    const uint64_t at = pos_;
    std::string s = String(what);
    PC_CHECK(!s.empty(), where_, ": ", what, " at byte ", at, " is empty");
    PC_CHECK(s.size() <= kMaxNameBytes, where_, ": ", what, " at byte ", at, " is ", s.size(),
             " bytes long (at most ", kMaxNameBytes, ")");
    size_t bad = FindInvalidUtf8(s);
    PC_CHECK(bad == std::string::npos, where_, ": ", what, " at byte ", at, " is not valid UTF-8 (byte ", bad,
             " of the name)");
    return s;
  }
  GgufType ValueType(const std::string& what) {
    const uint64_t at = pos_;
    uint32_t t = U32(what + " type");
    PC_CHECK(FindValueType(t) != nullptr, where_, ": ", what, " at byte ", at, " has unknown value type ", t,
             " (GGUF value types are 0..12)");
    return static_cast<GgufType>(t);
  }
  // The fewest bytes one value of type `t` can occupy: bounds array counts before allocation.
  uint64_t MinBytes(GgufType t) const {
    if (t == GgufType::kString) return count_bytes();
    if (t == GgufType::kArray) return 4 + count_bytes();
    return FindValueType(static_cast<uint32_t>(t))->size;
  }

  GgufValue Value(GgufType type, const std::string& what, int depth) {
    GgufValue v;
    v.type = type;
    switch (type) {
      case GgufType::kString:
        v.str = String(what);
        break;
      case GgufType::kArray: {
        PC_CHECK(depth < kMaxArrayDepth, where_, ": ", what, " at byte ", pos_, " nests arrays deeper than ",
                 kMaxArrayDepth, " levels");
        v.elem = ValueType(what + " element");
        const uint64_t at = pos_;
        v.count = Count(what + " count");
        const uint64_t min = MinBytes(v.elem);
        PC_CHECK(v.count <= remaining() / min, where_, ": ", what, " at byte ", at, " claims ", v.count, " ",
                 GgufTypeName(v.elem), " elements (at least ", min, " bytes each), but the file has ", remaining(),
                 " bytes left");
        if (v.elem == GgufType::kString) {
          v.strings.reserve(v.count);
          for (uint64_t k = 0; k < v.count; ++k) v.strings.push_back(String(Str(what, "[", k, "]")));
        } else if (v.elem == GgufType::kArray) {
          v.arrays.reserve(v.count);
          for (uint64_t k = 0; k < v.count; ++k) {
            std::string item = Str(what, "[", k, "]");
            v.arrays.push_back(Value(GgufType::kArray, item, depth + 1));
          }
        } else {
          v.raw = Bytes(v.count * min, what);
          if (v.elem == GgufType::kBool) CheckBools(v.raw, what, at);
        }
        break;
      }
      case GgufType::kBool: {
        const uint64_t at = pos_;
        v.u = Uint(1, what);
        PC_CHECK(v.u <= 1, where_, ": ", what, " at byte ", at, " is a bool of value ", v.u, " (expected 0 or 1)");
        break;
      }
      case GgufType::kF32: {
        uint32_t bits = U32(what);
        float x;
        std::memcpy(&x, &bits, 4);
        v.f = x;
        break;
      }
      case GgufType::kF64: {
        uint64_t bits = Uint(8, what);
        std::memcpy(&v.f, &bits, 8);
        break;
      }
      case GgufType::kI8:
      case GgufType::kI16:
      case GgufType::kI32:
      case GgufType::kI64: {
        const int n = FindValueType(static_cast<uint32_t>(type))->size;
        uint64_t bits = Uint(n, what);
        if (n < 8 && (bits >> (8 * n - 1)) != 0) bits |= ~uint64_t{0} << (8 * n);  // sign-extend
        v.i = static_cast<int64_t>(bits);
        break;
      }
      default:  // unsigned
        v.u = Uint(FindValueType(static_cast<uint32_t>(type))->size, what);
        break;
    }
    return v;
  }

 private:
  void CheckBools(const std::string& raw, const std::string& what, uint64_t at) const {
    for (size_t k = 0; k < raw.size(); ++k) {
      PC_CHECK(static_cast<uint8_t>(raw[k]) <= 1, where_, ": ", what, " (array at byte ", at, ") element ", k,
               " is a bool of value ", static_cast<int>(static_cast<uint8_t>(raw[k])), " (expected 0 or 1)");
    }
  }

  const uint8_t* p_;
  uint64_t size_;
  uint64_t pos_ = 0;
  const std::string& where_;
  uint32_t version_ = 3;
};

uint32_t ByteSwap32(uint32_t v) {
  return (v >> 24) | ((v >> 8) & 0xff00) | ((v << 8) & 0xff0000) | (v << 24);
}

void ParseTensorInfo(Reader& r, GgufTensorInfo& t, size_t index, const std::string& where) {
  t.name = r.Name(Str("tensor ", index, " name"));
  const std::string what = Str(where, ": tensor '", t.name, "'");
  const uint64_t dims_at = r.pos();
  uint32_t n_dims = r.U32(Str("tensor '", t.name, "' n_dims"));
  PC_CHECK(n_dims >= 1 && n_dims <= kMaxDims, what, " at byte ", dims_at, " has ", n_dims,
           " dimensions (expected 1 to ", kMaxDims, ")");
  uint64_t elements = 1;
  for (uint32_t d = 0; d < n_dims; ++d) {
    uint64_t n = r.Count(Str("tensor '", t.name, "' dimension ", d));
    PC_CHECK(n >= 1, what, ": dimension ", d, " is 0 (empty tensors are not supported)");
    PC_CHECK(n <= static_cast<uint64_t>(INT64_MAX) && !__builtin_mul_overflow(elements, n, &elements) &&
                 elements <= static_cast<uint64_t>(INT64_MAX),
             what, ": dimensions overflow (dimension ", d, " = ", n, ", product beyond 2^63)");
    t.ne.push_back(static_cast<int64_t>(n));
  }
  t.elements = static_cast<int64_t>(elements);
  const uint64_t type_at = r.pos();
  uint32_t type = r.U32(Str("tensor '", t.name, "' type"));
  const GgmlTypeInfo* info = FindGgmlType(type);
  PC_CHECK(info != nullptr, what, " at byte ", type_at, " has unknown ggml type ", type);
  t.type = info->type;
  PC_CHECK(t.ne[0] % info->block_size == 0, what, ": row length ne[0] = ", t.ne[0], " is not a multiple of ",
           info->name, "'s block of ", info->block_size, " elements");
  // elements / block_size blocks of type_size bytes: cannot overflow past elements * type_size.
  PC_CHECK(!__builtin_mul_overflow(elements / info->block_size, static_cast<uint64_t>(info->type_size), &t.bytes),
           what, ": byte size of ", elements, " ", info->name, " elements overflows");
  t.offset = r.Uint(8, Str("tensor '", t.name, "' offset"));
}

}  // namespace

const GgmlTypeInfo* FindGgmlType(uint32_t number) {
  for (const auto& r : kGgmlTypes) {
    if (static_cast<uint32_t>(r.type) == number) return &r;
  }
  return nullptr;
}

const GgmlTypeInfo& GgmlInfo(GgmlType type) {
  const GgmlTypeInfo* info = FindGgmlType(static_cast<uint32_t>(type));
  PC_ASSERT(info != nullptr, "unknown GgmlType ", static_cast<uint32_t>(type));
  return *info;
}

const char* GgmlTypeName(GgmlType type) { return GgmlInfo(type).name; }

std::string DequantizableTypeNames() {
  std::string s;
  for (const auto& r : kGgmlTypes) {
    if (r.dequantizable) s += std::string(s.empty() ? "" : ", ") + r.name;
  }
  return s;
}

const char* GgufTypeName(GgufType type) {
  const ValueTypeRow* r = FindValueType(static_cast<uint32_t>(type));
  return r == nullptr ? "?" : r->name;
}

bool GgufValue::IsInteger() const {
  switch (type) {
    case GgufType::kU8: case GgufType::kI8: case GgufType::kU16: case GgufType::kI16: case GgufType::kU32:
    case GgufType::kI32: case GgufType::kU64: case GgufType::kI64:
      return true;
    default:
      return false;
  }
}

bool GgufValue::IsNumber() const { return IsInteger() || type == GgufType::kF32 || type == GgufType::kF64; }

int64_t GgufValue::IntAt(uint64_t k, const std::string& where) const {
  PC_ASSERT(type == GgufType::kArray && k < count && !raw.empty(), "IntAt on a non-number array");
  const int n = FindValueType(static_cast<uint32_t>(elem))->size;
  uint64_t bits = LoadLE(reinterpret_cast<const uint8_t*>(raw.data()) + k * n, n);
  switch (elem) {
    case GgufType::kI8: case GgufType::kI16: case GgufType::kI32: case GgufType::kI64:
      if (n < 8 && (bits >> (8 * n - 1)) != 0) bits |= ~uint64_t{0} << (8 * n);
      return static_cast<int64_t>(bits);
    case GgufType::kF32: case GgufType::kF64:
      PC_THROW(where, ": element ", k, " is ", GgufTypeName(elem), ", expected an integer");
    default:
      PC_CHECK(bits <= static_cast<uint64_t>(INT64_MAX), where, ": element ", k, " = ", bits, " is too large");
      return static_cast<int64_t>(bits);
  }
}

double GgufValue::FloatAt(uint64_t k) const {
  PC_ASSERT(type == GgufType::kArray && k < count && !raw.empty(), "FloatAt on a non-number array");
  const int n = FindValueType(static_cast<uint32_t>(elem))->size;
  uint64_t bits = LoadLE(reinterpret_cast<const uint8_t*>(raw.data()) + k * n, n);
  if (elem == GgufType::kF32) {
    float x;
    uint32_t b = static_cast<uint32_t>(bits);
    std::memcpy(&x, &b, 4);
    return x;
  }
  if (elem == GgufType::kF64) {
    double x;
    std::memcpy(&x, &bits, 8);
    return x;
  }
  switch (elem) {
    case GgufType::kI8: case GgufType::kI16: case GgufType::kI32: case GgufType::kI64:
      if (n < 8 && (bits >> (8 * n - 1)) != 0) bits |= ~uint64_t{0} << (8 * n);
      return static_cast<double>(static_cast<int64_t>(bits));
    default:
      return static_cast<double>(bits);
  }
}

std::string GgufValue::Describe() const {
  switch (type) {
    case GgufType::kArray: return Str("array[", GgufTypeName(elem), "] of ", count);
    case GgufType::kString: return Str("string of ", str.size(), " bytes");
    case GgufType::kF32: case GgufType::kF64: return Str(GgufTypeName(type), " ", f);
    case GgufType::kI8: case GgufType::kI16: case GgufType::kI32: case GgufType::kI64:
      return Str(GgufTypeName(type), " ", i);
    default: return Str(GgufTypeName(type), " ", u);
  }
}

const GgufValue* GgufHeader::Find(const std::string& key) const {
  auto it = metadata_index.find(key);
  return it == metadata_index.end() ? nullptr : &metadata[it->second].second;
}

const GgufTensorInfo* GgufHeader::FindTensor(const std::string& name) const {
  auto it = tensor_index.find(name);
  return it == tensor_index.end() ? nullptr : &tensors[it->second];
}

GgufHeader ParseGgufHeader(const uint8_t* bytes, uint64_t size, const std::string& where) {
  GgufHeader h;
  PC_CHECK(size >= 4 && std::memcmp(bytes, "GGUF", 4) == 0, where, ": not a GGUF file (the first 4 bytes are not "
           "\"GGUF\")");
  Reader r(bytes, size, where);
  r.Bytes(4, "magic");
  h.version = r.U32("version");
  const uint32_t swapped = ByteSwap32(h.version);
  PC_CHECK(!((h.version & 0xffff) == 0 && swapped >= 1 && swapped <= 3), where, ": big-endian GGUF file (version ",
           swapped, " stored byte-swapped); only little-endian GGUF files are supported");
  PC_CHECK(h.version >= 1 && h.version <= 3, where, ": GGUF version ", h.version, " is not supported (1, 2, 3)");
  r.set_version(h.version);
  const uint64_t n_tensors = r.Count("tensor count");
  const uint64_t n_kv = r.Count("metadata count");
  // Every key/value takes at least a key length, one key byte, a type and one value byte; every
  // tensor a name length, one name byte, n_dims, one dimension, a type and an offset.
  const uint64_t min_kv = r.count_bytes() + 1 + 4 + 1, min_tensor = r.count_bytes() * 2 + 1 + 4 + 4 + 8;
  PC_CHECK(n_kv <= r.remaining() / min_kv, where, ": header claims ", n_kv, " metadata entries, but the file has ",
           r.remaining(), " bytes left (at least ", min_kv, " each)");
  PC_CHECK(n_tensors <= r.remaining() / min_tensor, where, ": header claims ", n_tensors,
           " tensors, but the file has ", r.remaining(), " bytes left (at least ", min_tensor, " each)");

  h.metadata.reserve(n_kv);
  for (uint64_t k = 0; k < n_kv; ++k) {
    const uint64_t at = r.pos();
    std::string key = r.Name(Str("metadata key ", k));
    PC_CHECK(h.metadata_index.count(key) == 0, where, ": metadata key '", key, "' at byte ", at,
             " appears twice");
    GgufType type = r.ValueType(Str("metadata '", key, "'"));
    GgufValue value = r.Value(type, Str("metadata '", key, "'"), 0);
    h.metadata_index[key] = h.metadata.size();
    h.metadata.emplace_back(std::move(key), std::move(value));
  }
  if (const GgufValue* a = h.Find("general.alignment")) {
    PC_CHECK(a->type == GgufType::kU32, where, ": general.alignment is ", a->Describe(), ", expected uint32");
    PC_CHECK(a->u != 0 && (a->u & (a->u - 1)) == 0, where, ": general.alignment ", a->u,
             " is not a power of two");
    h.alignment = a->u;
  }

  h.tensors.resize(0);
  h.tensors.reserve(n_tensors);
  for (uint64_t k = 0; k < n_tensors; ++k) {
    GgufTensorInfo t;
    const uint64_t at = r.pos();
    ParseTensorInfo(r, t, k, where);
    PC_CHECK(h.tensor_index.count(t.name) == 0, where, ": tensor '", t.name, "' at byte ", at, " appears twice");
    h.tensor_index[t.name] = h.tensors.size();
    h.tensors.push_back(std::move(t));
  }
  // The data section starts at the next multiple of the alignment.
  h.data_offset = (r.pos() + h.alignment - 1) / h.alignment * h.alignment;
  h.data_size = h.data_offset <= size ? size - h.data_offset : 0;
  for (const auto& t : h.tensors) {
    const std::string what = Str(where, ": tensor '", t.name, "'");
    PC_CHECK(t.offset % h.alignment == 0, what, ": offset ", t.offset, " is not a multiple of the alignment ",
             h.alignment);
    PC_CHECK(t.offset <= h.data_size && t.bytes <= h.data_size - t.offset, what, ": ", t.bytes, " bytes at offset ", t.offset,
             " reach beyond the data section's ", h.data_size, " bytes (data starts at byte ", h.data_offset,
             " of a ", size, "-byte file: truncated?)");
  }
  // No two tensors may share bytes.
  std::vector<const GgufTensorInfo*> order;
  for (const auto& t : h.tensors) order.push_back(&t);
  std::stable_sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
  for (size_t k = 1; k < order.size(); ++k) {
    const GgufTensorInfo& a = *order[k - 1];
    const GgufTensorInfo& b = *order[k];
    PC_CHECK(a.offset + a.bytes <= b.offset, where, ": tensors '", a.name, "' [", a.offset, ", ", a.offset + a.bytes,
             ") and '", b.name, "' [", b.offset, ", ", b.offset + b.bytes, ") overlap");
  }
  return h;
}

// ---- GgufFile -------------------------------------------------------------------------------

std::unique_ptr<GgufFile> GgufFile::Open(const std::string& path) {
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->path_ = path;
  f->fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  PC_CHECK(f->fd_ >= 0, "cannot open '", path, "': ", std::strerror(errno));
  struct stat st;
  PC_CHECK(::fstat(f->fd_, &st) == 0, "cannot stat '", path, "': ", std::strerror(errno));
  PC_CHECK(S_ISREG(st.st_mode), "'", path, "' is not a regular file");
  f->file_size_ = static_cast<uint64_t>(st.st_size);
  PC_CHECK(f->file_size_ >= 4, "'", path, "': file of ", f->file_size_, " bytes is too short for a GGUF file");
  void* map = ::mmap(nullptr, f->file_size_, PROT_READ, MAP_PRIVATE, f->fd_, 0);
  PC_CHECK(map != MAP_FAILED, "cannot map '", path, "': ", std::strerror(errno));
  f->map_ = static_cast<uint8_t*>(map);
  f->header_ = ParseGgufHeader(f->map_, f->file_size_, path);
  return f;
}

GgufFile::~GgufFile() {
  if (map_ != nullptr) ::munmap(map_, file_size_);
  if (fd_ >= 0) ::close(fd_);
}

std::string GgufFile::String(const std::string& key) const {
  const GgufValue* v = Find(key);
  PC_CHECK(v != nullptr, path_, ": metadata '", key, "' is missing");
  PC_CHECK(v->type == GgufType::kString, path_, ": metadata '", key, "' is ", v->Describe(), ", expected a string");
  return v->str;
}

std::string GgufFile::StringOr(const std::string& key, const std::string& fallback) const {
  return Find(key) == nullptr ? fallback : String(key);
}

int64_t GgufFile::Int(const std::string& key) const {
  const GgufValue* v = Find(key);
  PC_CHECK(v != nullptr, path_, ": metadata '", key, "' is missing");
  PC_CHECK(v->IsInteger(), path_, ": metadata '", key, "' is ", v->Describe(), ", expected an integer");
  if (v->type == GgufType::kI8 || v->type == GgufType::kI16 || v->type == GgufType::kI32 ||
      v->type == GgufType::kI64) {
    return v->i;
  }
  PC_CHECK(v->u <= static_cast<uint64_t>(INT64_MAX), path_, ": metadata '", key, "' = ", v->u, " is too large");
  return static_cast<int64_t>(v->u);
}

int64_t GgufFile::IntOr(const std::string& key, int64_t fallback) const {
  return Find(key) == nullptr ? fallback : Int(key);
}

double GgufFile::Float(const std::string& key) const {
  const GgufValue* v = Find(key);
  PC_CHECK(v != nullptr, path_, ": metadata '", key, "' is missing");
  PC_CHECK(v->IsNumber(), path_, ": metadata '", key, "' is ", v->Describe(), ", expected a number");
  if (v->type == GgufType::kF32 || v->type == GgufType::kF64) {
    PC_CHECK(std::isfinite(v->f), path_, ": metadata '", key, "' is not finite");
    return v->f;
  }
  return static_cast<double>(Int(key));
}

double GgufFile::FloatOr(const std::string& key, double fallback) const {
  return Find(key) == nullptr ? fallback : Float(key);
}

bool GgufFile::BoolOr(const std::string& key, bool fallback) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return fallback;
  PC_CHECK(v->type == GgufType::kBool, path_, ": metadata '", key, "' is ", v->Describe(), ", expected a bool");
  return v->u != 0;
}

void GgufFile::ReadF32(const GgufTensorInfo& t, float* out) const {
  const GgmlTypeInfo& info = GgmlInfo(t.type);
  PC_CHECK(info.dequantizable, path_, ": tensor '", t.name, "' has type ", info.name,
           ", which perpcomp cannot convert to f32 (supported: ", DequantizableTypeNames(), ")");
  // In pieces of whole blocks, each piece's pages dropped behind the read.
  const int64_t blocks_per_piece = std::max<int64_t>(1, (16 << 20) / info.type_size);
  const int64_t blocks = t.elements / info.block_size;
  const uint8_t* src = TensorBytes(t);
  for (int64_t b = 0; b < blocks; b += blocks_per_piece) {
    const int64_t n = std::min(blocks_per_piece, blocks - b);
    DequantizeGgml(t.type, src + b * info.type_size, n * info.block_size, out + b * info.block_size);
    const uint64_t begin = header_.data_offset + t.offset + b * info.type_size;
    DropPages(begin, begin + n * info.type_size);
  }
}

void GgufFile::ReadRaw(const GgufTensorInfo& t, void* out) const {
  constexpr uint64_t kPiece = 16ULL << 20;
  auto* dst = static_cast<uint8_t*>(out);
  const uint64_t begin = header_.data_offset + t.offset;
  for (uint64_t pos = 0; pos < t.bytes; pos += kPiece) {
    const uint64_t n = std::min(kPiece, t.bytes - pos);
    std::memcpy(dst + pos, map_ + begin + pos, n);
    DropPages(begin + pos, begin + pos + n);
  }
}

void GgufFile::DropPages(uint64_t begin, uint64_t end) const {
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  begin = (begin + page - 1) / page * page;  // whole pages inside the range only
  end = end / page * page;
  if (end > begin) ::madvise(map_ + begin, end - begin, MADV_DONTNEED);
}

}  // namespace pc
