#include "model/gguf_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/strings.h"

namespace pc {

uint16_t FloatToHalf(float x) {
  uint32_t f;
  std::memcpy(&f, &x, 4);
  const uint32_t sign = (f >> 16) & 0x8000u;
  const uint32_t exp = (f >> 23) & 0xFFu;
  uint32_t mant = f & 0x7FFFFFu;
  if (exp == 0xFF) return static_cast<uint16_t>(sign | 0x7C00u | (mant ? 0x200u | (mant >> 13) : 0u));
  const int e = static_cast<int>(exp) - 127 + 15;  // the half's biased exponent
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7C00u);
  if (e <= 0) {  // subnormal half (or zero): shift the mantissa with its implicit bit, round to even
    if (e < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    const int shift = 14 - e;  // 1 - e + 13
    const uint32_t half = mant >> shift, rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
    const uint32_t r = half + (rem > mid || (rem == mid && (half & 1u)));
    return static_cast<uint16_t>(sign | r);
  }
  const uint32_t half = (static_cast<uint32_t>(e) << 10) | (mant >> 13), rem = mant & 0x1FFFu;
  // A carry out of the mantissa moves to the exponent (and to inf), as it should.
  return static_cast<uint16_t>(sign | (half + (rem > 0x1000u || (rem == 0x1000u && (half & 1u)))));
}

uint16_t FloatToBFloat16(float x) {
  uint32_t f;
  std::memcpy(&f, &x, 4);
  if ((f & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((f >> 16) | 0x40u);
  return static_cast<uint16_t>((f + 0x7FFFu + ((f >> 16) & 1u)) >> 16);
}

namespace {
void PutHalf(uint8_t* p, uint16_t h) {
  p[0] = static_cast<uint8_t>(h & 0xFF);
  p[1] = static_cast<uint8_t>(h >> 8);
}
void PackNibbles(const uint8_t* q, uint8_t* dst) {
  for (int j = 0; j < 16; ++j) {
    PC_ASSERT(q[j] < 16 && q[j + 16] < 16, "4-bit code out of range");
    dst[j] = static_cast<uint8_t>(q[j] | (q[j + 16] << 4));
  }
}
}  // namespace

void EncodeQ4_0(const uint8_t* q, const uint16_t* d, int64_t blocks, uint8_t* dst) {
  for (int64_t b = 0; b < blocks; ++b, dst += 18, q += 32) {
    PutHalf(dst, d[b]);
    PackNibbles(q, dst + 2);
  }
}

void EncodeQ4_1(const uint8_t* q, const uint16_t* d, const uint16_t* m, int64_t blocks, uint8_t* dst) {
  for (int64_t b = 0; b < blocks; ++b, dst += 20, q += 32) {
    PutHalf(dst, d[b]);
    PutHalf(dst + 2, m[b]);
    PackNibbles(q, dst + 4);
  }
}

void EncodeQ8_0(const int8_t* q, const uint16_t* d, int64_t blocks, uint8_t* dst) {
  for (int64_t b = 0; b < blocks; ++b, dst += 34, q += 32) {
    PutHalf(dst, d[b]);
    std::memcpy(dst + 2, q, 32);
  }
}

GgufValue GgufString(const std::string& s) {
  GgufValue v;
  v.type = GgufType::kString;
  v.str = s;
  return v;
}
GgufValue GgufU32(uint32_t x) {
  GgufValue v;
  v.type = GgufType::kU32;
  v.u = x;
  return v;
}
GgufValue GgufI32(int32_t x) {
  GgufValue v;
  v.type = GgufType::kI32;
  v.i = x;
  return v;
}
GgufValue GgufF32(float x) {
  GgufValue v;
  v.type = GgufType::kF32;
  v.f = x;
  return v;
}
GgufValue GgufBool(bool x) {
  GgufValue v;
  v.type = GgufType::kBool;
  v.u = x ? 1 : 0;
  return v;
}
GgufValue GgufStringArray(const std::vector<std::string>& s) {
  GgufValue v;
  v.type = GgufType::kArray;
  v.elem = GgufType::kString;
  v.count = s.size();
  v.strings = s;
  return v;
}
namespace {
template <typename T>
GgufValue NumberArray(GgufType elem, const std::vector<T>& x) {
  GgufValue v;
  v.type = GgufType::kArray;
  v.elem = elem;
  v.count = x.size();
  v.raw.assign(reinterpret_cast<const char*>(x.data()), x.size() * sizeof(T));
  return v;
}

int ScalarSize(GgufType t) {
  switch (t) {
    case GgufType::kU8: case GgufType::kI8: case GgufType::kBool: return 1;
    case GgufType::kU16: case GgufType::kI16: return 2;
    case GgufType::kU32: case GgufType::kI32: case GgufType::kF32: return 4;
    case GgufType::kU64: case GgufType::kI64: case GgufType::kF64: return 8;
    default: return 0;
  }
}

// The serialized value (after its type tag): little-endian, version-3 u64 lengths.
void Serialize(const GgufValue& v, std::string& out) {
  auto put = [&](const void* p, size_t n) { out.append(static_cast<const char*>(p), n); };
  auto put_u64 = [&](uint64_t x) { put(&x, 8); };
  auto put_u32 = [&](uint32_t x) { put(&x, 4); };
  switch (v.type) {
    case GgufType::kString:
      put_u64(v.str.size());
      put(v.str.data(), v.str.size());
      return;
    case GgufType::kArray:
      put_u32(static_cast<uint32_t>(v.elem));
      put_u64(v.count);
      if (v.elem == GgufType::kString) {
        PC_ASSERT(v.strings.size() == v.count, "string array count");
        for (const std::string& s : v.strings) {
          put_u64(s.size());
          put(s.data(), s.size());
        }
      } else if (v.elem == GgufType::kArray) {
        PC_ASSERT(v.arrays.size() == v.count, "array array count");
        for (const GgufValue& a : v.arrays) Serialize(a, out);
      } else {
        PC_ASSERT(v.raw.size() == v.count * ScalarSize(v.elem), "number array bytes");
        out += v.raw;
      }
      return;
    case GgufType::kF32: {
      const float f = static_cast<float>(v.f);
      put(&f, 4);
      return;
    }
    case GgufType::kF64: put(&v.f, 8); return;
    case GgufType::kI8: case GgufType::kI16: case GgufType::kI32: case GgufType::kI64:
      put(&v.i, ScalarSize(v.type));  // little-endian: the low bytes first
      return;
    default:
      put(&v.u, ScalarSize(v.type));
      return;
  }
}
}  // namespace

GgufValue GgufF32Array(const std::vector<float>& v) { return NumberArray(GgufType::kF32, v); }
GgufValue GgufI32Array(const std::vector<int32_t>& v) { return NumberArray(GgufType::kI32, v); }

GgufWriter::GgufWriter(const std::string& path, bool overwrite)
    : staged_(std::make_unique<fs::StagedFile>(path, overwrite, "--out")) {
  header_.version = 3;
}

GgufWriter::~GgufWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void GgufWriter::AddMetadata(const std::string& key, GgufValue value) {
  PC_ASSERT(fd_ < 0, "metadata after the header was written");
  PC_ASSERT(!key.empty() && header_.metadata_index.count(key) == 0, "metadata key '", key, "' added twice");
  if (key == "general.alignment") {
    PC_ASSERT(value.type == GgufType::kU32 && value.u > 0 && (value.u & (value.u - 1)) == 0, "alignment");
    header_.alignment = value.u;
  }
  header_.metadata_index[key] = header_.metadata.size();
  header_.metadata.emplace_back(key, std::move(value));
}

void GgufWriter::DeclareTensor(const std::string& name, GgmlType type, const std::vector<int64_t>& ne) {
  PC_ASSERT(fd_ < 0, "tensor declared after the header was written");
  PC_ASSERT(!name.empty() && header_.tensor_index.count(name) == 0, "tensor '", name, "' declared twice");
  PC_ASSERT(!ne.empty() && ne.size() <= 4, "tensor '", name, "' dimensions");
  const GgmlTypeInfo& info = GgmlInfo(type);
  GgufTensorInfo t;
  t.name = name;
  t.type = type;
  t.ne = ne;
  t.elements = 1;
  for (int64_t n : ne) {
    PC_ASSERT(n > 0, "tensor '", name, "' has an empty dimension");
    t.elements *= n;
  }
  PC_CHECK(ne[0] % info.block_size == 0, "GGUF tensor '", name, "': row length ", ne[0], " is not a multiple of ",
           info.name, "'s block of ", info.block_size, " elements");
  t.bytes = static_cast<uint64_t>(t.elements / info.block_size) * static_cast<uint64_t>(info.type_size);
  header_.tensor_index[name] = header_.tensors.size();
  header_.tensors.push_back(std::move(t));
}

uint64_t GgufWriter::TensorBytes(const std::string& name) const {
  const GgufTensorInfo* t = header_.FindTensor(name);
  PC_ASSERT(t != nullptr, "tensor '", name, "' was not declared");
  return t->bytes;
}

void GgufWriter::Put(const void* p, uint64_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t w = ::write(fd_, c, n);
    if (w < 0 && errno == EINTR) continue;
    const int err = w < 0 ? errno : ENOSPC;
    PC_CHECK_OUTPUT(w > 0, err == ENOSPC ? "no space left writing '" : err == EFBIG ? "file size limit reached writing '"
                                                                                   : "cannot write '",
                    staged_->final_path(), "' (at byte ", pos_, "): ", std::strerror(err),
                    "; nothing was written under that name and the temporary file is removed");
    c += w;
    n -= static_cast<uint64_t>(w);
    pos_ += static_cast<uint64_t>(w);
  }
}

void GgufWriter::PadTo(uint64_t alignment) {
  static const char zeros[256] = {};
  uint64_t pad = (alignment - pos_ % alignment) % alignment;
  while (pad > 0) {
    const uint64_t n = std::min<uint64_t>(pad, sizeof(zeros));
    Put(zeros, n);
    pad -= n;
  }
}

void GgufWriter::WriteHeader() {
  fd_ = ::open(staged_->path().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  PC_CHECK_OUTPUT(fd_ >= 0, "cannot create '", staged_->path(), "' for '", staged_->final_path(),
                  "': ", std::strerror(errno));
  std::string h = "GGUF";
  auto put64 = [&](uint64_t x) { h.append(reinterpret_cast<const char*>(&x), 8); };
  auto put32 = [&](uint32_t x) { h.append(reinterpret_cast<const char*>(&x), 4); };
  put32(header_.version);
  put64(header_.tensors.size());
  put64(header_.metadata.size());
  for (const auto& [key, value] : header_.metadata) {
    Serialize(GgufString(key), h);
    put32(static_cast<uint32_t>(value.type));
    Serialize(value, h);
  }
  uint64_t offset = 0;
  for (GgufTensorInfo& t : header_.tensors) {
    offset = (offset + header_.alignment - 1) / header_.alignment * header_.alignment;
    t.offset = offset;
    offset += t.bytes;
    Serialize(GgufString(t.name), h);
    put32(static_cast<uint32_t>(t.ne.size()));
    for (int64_t n : t.ne) put64(static_cast<uint64_t>(n));
    put32(static_cast<uint32_t>(t.type));
    put64(t.offset);
  }
  Put(h.data(), h.size());
  PadTo(header_.alignment);
  header_.data_offset = pos_;
}

void GgufWriter::Write(const std::string& name, const void* bytes, uint64_t size) {
  PC_ASSERT(!finished_, "Write after Finish");
  if (fd_ < 0) WriteHeader();
  PC_ASSERT(next_ < header_.tensors.size() && header_.tensors[next_].name == name, "tensor '", name,
            "' written out of declaration order");
  const GgufTensorInfo& t = header_.tensors[next_++];
  PC_ASSERT(size == t.bytes, "tensor '", name, "': ", size, " bytes written, ", t.bytes, " declared");
  PadTo(header_.alignment);
  PC_ASSERT(pos_ == header_.data_offset + t.offset, "tensor '", name, "' offset");
  Put(bytes, size);
}

void GgufWriter::Finish() {
  if (fd_ < 0) WriteHeader();  // a file without tensors
  PC_ASSERT(next_ == header_.tensors.size(), "Finish with ", header_.tensors.size() - next_, " tensors unwritten");
  PC_CHECK_OUTPUT(::fsync(fd_) == 0, "cannot sync '", staged_->final_path(), "': ", std::strerror(errno));
  const int rc = ::close(fd_);
  fd_ = -1;
  PC_CHECK_OUTPUT(rc == 0, "cannot close '", staged_->final_path(), "': ", std::strerror(errno));
  staged_->Commit();
  finished_ = true;
}

}  // namespace pc
