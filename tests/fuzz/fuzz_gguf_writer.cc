// Fuzz target: the GGUF writer, checked by the reader. Input: a recipe of bytes that chooses the
// alignment, metadata (every value type the writer makes, with arbitrary string bytes) and up to
// eight tensors (F32/F16/BF16/Q4_0/Q4_1/Q8_0, 1 to 4 dimensions, data taken from the input). The
// file is written with GgufWriter, parsed back with ParseGgufHeader, and every key, value, tensor
// name, type, shape and byte must come back as written: any difference aborts (a finding). A row
// length that is no multiple of the type's block must be refused with pc::Error.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/fs.h"
#include "model/gguf_format.h"
#include "model/gguf_writer.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

// Reads the fuzzer's bytes as numbers and strings; past the end everything is zero.
class Recipe {
 public:
  Recipe(const uint8_t* data, size_t size) : p_(data), n_(size) {}
  uint8_t U8() { return pos_ < n_ ? p_[pos_++] : 0; }
  uint32_t U32() {
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) v |= static_cast<uint32_t>(U8()) << (8 * k);
    return v;
  }
  std::string Bytes(size_t max) {  // arbitrary bytes, length up to max
    const size_t len = U8() % (max + 1);
    std::string s;
    for (size_t k = 0; k < len; ++k) s.push_back(static_cast<char>(U8()));
    return s;
  }
  // A valid, non-empty UTF-8 name: ASCII, a two-byte and a three-byte character to choose from.
  std::string Name(const std::string& prefix) {
    static const char* const kPieces[] = {"a", "z", ".", "_", "0", "9", "\xc3\xa9", "\xe2\x8a\xa5"};
    std::string s = prefix;
    const int len = U8() % 12;
    for (int k = 0; k < len; ++k) s += kPieces[U8() % 8];
    return s;
  }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
};

void Require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz finding: GGUF written and read back differ: %s\n", what);
    std::abort();
  }
}

bool SameValue(const pc::GgufValue& a, const pc::GgufValue& b) {
  if (a.type != b.type) return false;
  switch (a.type) {
    case pc::GgufType::kString: return a.str == b.str;
    case pc::GgufType::kArray:
      if (a.elem != b.elem || a.count != b.count || a.strings != b.strings || a.raw != b.raw) return false;
      if (a.arrays.size() != b.arrays.size()) return false;
      for (size_t k = 0; k < a.arrays.size(); ++k)  // arrays of arrays, element by element
        if (!SameValue(a.arrays[k], b.arrays[k])) return false;
      return true;
    case pc::GgufType::kF32: return std::memcmp(&a.f, &b.f, sizeof a.f) == 0 || (a.f != a.f && b.f != b.f);
    default: return a.u == b.u && a.i == b.i;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = pc::fuzz::ScratchPath("writer.gguf");
  Recipe r(data, size);
  pc::fuzz::ExpectOnlyPcErrors([&] {
    pc::GgufWriter w(path, /*overwrite=*/true);
    std::vector<std::pair<std::string, pc::GgufValue>> meta;
    if (r.U8() % 2) meta.emplace_back("general.alignment", pc::GgufU32(1u << (r.U8() % 9)));
    const int n_meta = r.U8() % 8;
    for (int k = 0; k < n_meta; ++k) {
      const std::string key = r.Name("k" + std::to_string(k));  // the index keeps keys unique
      switch (r.U8() % 9) {
        case 0: meta.emplace_back(key, pc::GgufString(r.Bytes(40))); break;
        case 1: meta.emplace_back(key, pc::GgufU32(r.U32())); break;
        case 2: meta.emplace_back(key, pc::GgufI32(static_cast<int32_t>(r.U32()))); break;
        case 3: {
          float f;
          const uint32_t bits = r.U32();
          std::memcpy(&f, &bits, sizeof f);
          meta.emplace_back(key, pc::GgufF32(f));
          break;
        }
        case 4: meta.emplace_back(key, pc::GgufBool(r.U8() % 2)); break;
        case 5: {
          std::vector<std::string> v(r.U8() % 6);
          for (auto& s : v) s = r.Bytes(12);
          meta.emplace_back(key, pc::GgufStringArray(v));
          break;
        }
        case 6: {
          std::vector<float> v(r.U8() % 9);
          for (auto& f : v) f = static_cast<float>(static_cast<int32_t>(r.U32())) / 65536.0f;
          meta.emplace_back(key, pc::GgufF32Array(v));
          break;
        }
        case 7: {  // an array of arrays (of i32 arrays, or string arrays)
          pc::GgufValue outer;
          outer.type = pc::GgufType::kArray;
          outer.elem = pc::GgufType::kArray;
          outer.count = r.U8() % 4;
          for (uint64_t j = 0; j < outer.count; ++j) {
            if (r.U8() % 2) {
              std::vector<int32_t> v(r.U8() % 5);
              for (auto& i : v) i = static_cast<int32_t>(r.U32());
              outer.arrays.push_back(pc::GgufI32Array(v));
            } else {
              std::vector<std::string> v(r.U8() % 3);
              for (auto& t : v) t = r.Bytes(8);
              outer.arrays.push_back(pc::GgufStringArray(v));
            }
          }
          meta.emplace_back(key, outer);
          break;
        }
        default: {
          std::vector<int32_t> v(r.U8() % 9);
          for (auto& i : v) i = static_cast<int32_t>(r.U32());
          meta.emplace_back(key, pc::GgufI32Array(v));
          break;
        }
      }
    }
    for (const auto& [key, value] : meta) w.AddMetadata(key, value);

    static const pc::GgmlType kTypes[] = {pc::GgmlType::kF32,  pc::GgmlType::kF16,  pc::GgmlType::kBF16,
                                          pc::GgmlType::kQ4_0, pc::GgmlType::kQ4_1, pc::GgmlType::kQ8_0};
    struct Declared {
      std::string name;
      pc::GgmlType type;
      std::vector<int64_t> ne;
    };
    std::vector<Declared> tensors(r.U8() % 9);
    for (size_t k = 0; k < tensors.size(); ++k) {
      Declared& t = tensors[k];
      t.name = r.Name("t" + std::to_string(k));
      t.type = kTypes[r.U8() % 6];
      const int block = pc::GgmlInfo(t.type).block_size;
      const uint8_t row = r.U8();
      // Mostly whole blocks; one recipe byte in 8 asks for a row length off the block (refused).
      t.ne.push_back(block > 1 && row % 8 == 0 ? block * (1 + row % 3) + 1 : block * (1 + row % 4));
      const int dims = 1 + r.U8() % 4;
      for (int d = 1; d < dims; ++d) t.ne.push_back(1 + r.U8() % 3);
      w.DeclareTensor(t.name, t.type, t.ne);  // pc::Error for a row off the block: expected
    }
    std::vector<std::string> written;
    for (const auto& t : tensors) {
      std::string bytes(w.TensorBytes(t.name), '\0');
      for (auto& c : bytes) c = static_cast<char>(r.U8());
      w.Write(t.name, bytes.data(), bytes.size());
      written.push_back(std::move(bytes));
    }
    w.Finish();

    const std::string file = pc::fs::ReadFile(path);
    const pc::GgufHeader h =
        pc::ParseGgufHeader(reinterpret_cast<const uint8_t*>(file.data()), file.size(), "writer.gguf");
    Require(h.version == 3, "version");
    Require(h.metadata.size() == meta.size(), "metadata count");
    for (size_t k = 0; k < meta.size(); ++k) {
      Require(h.metadata[k].first == meta[k].first, "metadata key");
      Require(SameValue(h.metadata[k].second, meta[k].second), "metadata value");
    }
    Require(h.tensors.size() == tensors.size(), "tensor count");
    for (size_t k = 0; k < tensors.size(); ++k) {
      const pc::GgufTensorInfo& t = h.tensors[k];
      Require(t.name == tensors[k].name && t.type == tensors[k].type && t.ne == tensors[k].ne, "tensor info");
      Require(t.offset % h.alignment == 0, "tensor offset alignment");
      Require(t.bytes == written[k].size() &&
                  std::memcmp(file.data() + h.data_offset + t.offset, written[k].data(), t.bytes) == 0,
              "tensor bytes");
    }
  });
  return 0;
}
