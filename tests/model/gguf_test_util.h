// tests/model/gguf_test_util.h — GGUF files built byte by byte (any version, any mistake), and
// the reference environment's python for the gguf package's references. No LibTorch.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "tests/test_support.h"

namespace pc::test {

class GgufBuilder {
 public:
  explicit GgufBuilder(uint32_t version = 3) : version_(version) {}

  // Low-level encoders, in this file's version (counts and lengths are u32 in version 1).
  static void Num(std::string& o, uint64_t v, int n) {
    for (int k = 0; k < n; ++k) o.push_back(static_cast<char>((v >> (8 * k)) & 0xff));
  }
  void Count(std::string& o, uint64_t v) const { Num(o, v, version_ == 1 ? 4 : 8); }
  void Str(std::string& o, const std::string& s) const {
    Count(o, s.size());
    o += s;
  }

  // A key/value with the value's bytes as given (type is the GGUF value type number).
  GgufBuilder& Kv(const std::string& key, uint32_t type, const std::string& value) {
    Str(kv_, key);
    Num(kv_, type, 4);
    kv_ += value;
    ++n_kv_;
    return *this;
  }
  GgufBuilder& U32(const std::string& key, uint32_t v) {
    std::string b;
    Num(b, v, 4);
    return Kv(key, 4, b);
  }
  GgufBuilder& I32(const std::string& key, int32_t v) {
    std::string b;
    Num(b, static_cast<uint32_t>(v), 4);
    return Kv(key, 5, b);
  }
  GgufBuilder& F32(const std::string& key, float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    std::string b;
    Num(b, bits, 4);
    return Kv(key, 6, b);
  }
  GgufBuilder& Bool(const std::string& key, bool v) { return Kv(key, 7, std::string(1, v ? '\1' : '\0')); }
  GgufBuilder& String(const std::string& key, const std::string& s) {
    std::string b;
    Str(b, s);
    return Kv(key, 8, b);
  }
  // Array value bytes: element type, count, then the elements' bytes.
  std::string ArrayBytes(uint32_t elem, uint64_t count, const std::string& elements) const {
    std::string b;
    Num(b, elem, 4);
    Count(b, count);
    return b + elements;
  }
  GgufBuilder& Strings(const std::string& key, const std::vector<std::string>& items) {
    std::string e;
    for (const auto& s : items) Str(e, s);
    return Kv(key, 9, ArrayBytes(8, items.size(), e));
  }
  GgufBuilder& Floats(const std::string& key, const std::vector<float>& items) {
    std::string e;
    for (float f : items) {
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      Num(e, bits, 4);
    }
    return Kv(key, 9, ArrayBytes(6, items.size(), e));
  }
  GgufBuilder& Ints(const std::string& key, const std::vector<int32_t>& items) {
    std::string e;
    for (int32_t v : items) Num(e, static_cast<uint32_t>(v), 4);
    return Kv(key, 9, ArrayBytes(5, items.size(), e));
  }

  // A tensor: ne in ggml order, ggml type number, its bytes; offset kAuto = the next aligned
  // offset. Data at offsets beyond 1 GiB is not written (hostile offsets).
  static constexpr uint64_t kAuto = UINT64_MAX;
  GgufBuilder& Tensor(const std::string& name, std::vector<uint64_t> ne, uint32_t type, const std::string& data,
                      uint64_t offset = kAuto) {
    tensors_.push_back({name, std::move(ne), type, data, offset});
    return *this;
  }
  GgufBuilder& Alignment(uint64_t a) {
    alignment_ = a;
    return *this;
  }
  GgufBuilder& CountsOverride(uint64_t n_tensors, uint64_t n_kv) {
    n_tensors_override_ = n_tensors;
    n_kv_override_ = n_kv;
    return *this;
  }

  std::string Build() const {
    std::string out = "GGUF";
    Num(out, version_, 4);
    Count(out, n_tensors_override_ != UINT64_MAX ? n_tensors_override_ : tensors_.size());
    Count(out, n_kv_override_ != UINT64_MAX ? n_kv_override_ : n_kv_);
    out += kv_;
    std::vector<uint64_t> offsets;
    uint64_t next = 0, end = 0;
    for (const auto& t : tensors_) {
      uint64_t off = t.offset != kAuto ? t.offset : next;
      offsets.push_back(off);
      if (off < (uint64_t{1} << 30)) {
        next = (off + t.data.size() + alignment_ - 1) / alignment_ * alignment_;
        end = std::max<uint64_t>(end, off + t.data.size());
      }
      Str(out, t.name);
      Num(out, t.ne.size(), 4);
      for (uint64_t d : t.ne) Count(out, d);
      Num(out, t.type, 4);
      Num(out, off, 8);
    }
    if (tensors_.empty()) return out;
    out.resize((out.size() + alignment_ - 1) / alignment_ * alignment_, '\0');
    const size_t base = out.size();
    out.resize(base + end, '\0');
    for (size_t k = 0; k < tensors_.size(); ++k) {
      if (offsets[k] >= (uint64_t{1} << 30)) continue;
      std::memcpy(&out[base + offsets[k]], tensors_[k].data.data(), tensors_[k].data.size());
    }
    return out;
  }

 private:
  struct T {
    std::string name;
    std::vector<uint64_t> ne;
    uint32_t type;
    std::string data;
    uint64_t offset;
  };
  uint32_t version_;
  std::string kv_;
  uint64_t n_kv_ = 0;
  std::vector<T> tensors_;
  uint64_t alignment_ = 32;
  uint64_t n_tensors_override_ = UINT64_MAX, n_kv_override_ = UINT64_MAX;
};

inline std::string F32Bytes(const std::vector<float>& v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(&s[0], v.data(), s.size());
  return s;
}

inline void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// The reference environment's python (tests/test_support.h RefPython: PC_REFENV or
// $PERPCOMP_REFENV), "" when it is absent.
inline std::string GgufRefPython() { return RefPython(); }

}  // namespace pc::test
