// The GGUF reader (model/gguf_format.h) and its dequantization (model/gguf_quants.h): versions,
// metadata types, the hostile-file suite, known answers, and bit-exactness against the gguf
// Python package (reference environment). No LibTorch: runs in the sanitizer build.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <set>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/fs.h"
#include "core/json_util.h"
#include "core/sha256.h"
#include "model/gguf_format.h"
#include "model/gguf_quants.h"
#include "tests/model/gguf_test_util.h"
#include "tests/test_support.h"

using Catch::Matchers::Contains;
using pc::test::GgufBuilder;

namespace {

std::string WriteTemp(const std::string& bytes, const std::string& name = "model.gguf") {
  std::string path = pc::test::TempDir("gguf") + "/" + name;
  pc::test::WriteBytes(path, bytes);
  return path;
}

std::string OpenError(const std::string& bytes) {
  std::string path = WriteTemp(bytes);
  try {
    pc::GgufFile::Open(path);
  } catch (const pc::Error& e) {
    return e.what();
  }
  return "";
}

// A minimal valid file around one F32 tensor of `ne`.
GgufBuilder OneTensor(uint32_t version = 3, std::vector<uint64_t> ne = {4, 2}) {
  GgufBuilder b(version);
  b.String("general.architecture", "llama");
  uint64_t n = 1;
  for (auto d : ne) n *= d;
  std::vector<float> v(n);
  for (uint64_t k = 0; k < n; ++k) v[k] = 0.25f * static_cast<float>(k) - 1.0f;
  b.Tensor("w", ne, 0, pc::test::F32Bytes(v));
  return b;
}

std::string U16Bytes(uint16_t v) {
  std::string s;
  GgufBuilder::Num(s, v, 2);
  return s;
}

}  // namespace

TEST_CASE("gguf: versions 1, 2 and 3 with every metadata value type", "[model][gguf]") {
  for (uint32_t version : {1u, 2u, 3u}) {
    CAPTURE(version);
    GgufBuilder b(version);
    std::string e;
    auto num = [&](uint64_t v, int n) {
      std::string s;
      GgufBuilder::Num(s, v, n);
      return s;
    };
    b.Kv("t.u8", 0, num(200, 1)).Kv("t.i8", 1, num(0xfe, 1)).Kv("t.u16", 2, num(65000, 2));
    b.Kv("t.i16", 3, num(0x8000, 2)).U32("t.u32", 4000000000u).I32("t.i32", -7).F32("t.f32", 0.5f);
    b.Bool("t.bool", true).String("t.str", "héllo");
    b.Kv("t.u64", 10, num(UINT64_MAX, 8)).Kv("t.i64", 11, num(static_cast<uint64_t>(-5), 8));
    double dv = -2.25;
    uint64_t dbits;
    std::memcpy(&dbits, &dv, 8);
    b.Kv("t.f64", 12, num(dbits, 8));
    b.Strings("t.strs", {"a", "", "ccc"}).Ints("t.ints", {1, -2, 3});
    // An array of two arrays of int16: [[1, -1], []].
    std::string inner1 = b.ArrayBytes(3, 2, num(1, 2) + num(0xffff, 2)), inner2 = b.ArrayBytes(3, 0, "");
    b.Kv("t.nested", 9, b.ArrayBytes(9, 2, inner1 + inner2));
    b.Kv("t.bools", 9, b.ArrayBytes(7, 2, std::string("\1\0", 2)));
    b.Tensor("w", {4, 2}, 0, pc::test::F32Bytes({1, 2, 3, 4, 5, 6, 7, 8}));
    auto f = pc::GgufFile::Open(WriteTemp(b.Build()));
    const auto& h = f->header();
    CHECK(h.version == version);
    CHECK(h.metadata.size() == 16);
    CHECK(h.Find("t.u8")->u == 200);
    CHECK(h.Find("t.i8")->i == -2);
    CHECK(h.Find("t.u16")->u == 65000);
    CHECK(h.Find("t.i16")->i == -32768);
    CHECK(f->Int("t.u32") == 4000000000LL);
    CHECK(f->Int("t.i32") == -7);
    CHECK(f->Float("t.f32") == 0.5);
    CHECK(f->BoolOr("t.bool", false));
    CHECK(f->String("t.str") == "héllo");
    CHECK(h.Find("t.u64")->u == UINT64_MAX);
    CHECK_THROWS_WITH(f->Int("t.u64"), Contains("too large"));
    CHECK(f->Int("t.i64") == -5);
    CHECK(f->Float("t.f64") == -2.25);
    CHECK(h.Find("t.strs")->strings == std::vector<std::string>{"a", "", "ccc"});
    const pc::GgufValue* ints = h.Find("t.ints");
    REQUIRE(ints->IsArrayOf(pc::GgufType::kI32));
    CHECK(ints->IntAt(1, "t.ints") == -2);
    CHECK(ints->FloatAt(2) == 3.0);
    const pc::GgufValue* nested = h.Find("t.nested");
    REQUIRE(nested->IsArrayOf(pc::GgufType::kArray));
    REQUIRE(nested->arrays.size() == 2);
    CHECK(nested->arrays[0].IntAt(1, "t.nested[0]") == -1);
    CHECK(nested->arrays[1].count == 0);
    CHECK(h.Find("t.bools")->IntAt(0, "t.bools") == 1);
    CHECK_THROWS_WITH(f->Int("t.str"), Contains("metadata 't.str' is string of 6 bytes, expected an integer"));
    CHECK_THROWS_WITH(f->String("missing"), Contains("metadata 'missing' is missing"));
    REQUIRE(h.tensors.size() == 1);
    const auto& t = h.tensors[0];
    CHECK(t.Shape() == std::vector<int64_t>{2, 4});
    CHECK(t.offset == 0);
    CHECK(h.data_offset % 32 == 0);
    std::vector<float> out(8);
    f->ReadF32(t, out.data());
    CHECK(out == std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8});
  }
}

TEST_CASE("gguf: general.alignment places the data and the tensors", "[model][gguf]") {
  GgufBuilder b;
  b.U32("general.alignment", 256).Alignment(256);
  b.Tensor("a", {3}, 0, pc::test::F32Bytes({1, 2, 3})).Tensor("b", {2}, 0, pc::test::F32Bytes({4, 5}));
  auto f = pc::GgufFile::Open(WriteTemp(b.Build()));
  CHECK(f->header().alignment == 256);
  CHECK(f->header().data_offset % 256 == 0);
  CHECK(f->header().FindTensor("b")->offset == 256);
  std::vector<float> out(2);
  f->ReadF32(*f->header().FindTensor("b"), out.data());
  CHECK(out == std::vector<float>{4, 5});

  GgufBuilder c;
  c.U32("general.alignment", 24).Alignment(24).Tensor("a", {3}, 0, pc::test::F32Bytes({1, 2, 3}));
  CHECK_THAT(OpenError(c.Build()), Contains("general.alignment 24 is not a power of two"));
  GgufBuilder z;
  z.U32("general.alignment", 0);
  CHECK_THAT(OpenError(z.Build()), Contains("general.alignment 0 is not a power of two"));
  GgufBuilder s;
  s.String("general.alignment", "32");
  CHECK_THAT(OpenError(s.Build()), Contains("general.alignment is string of 2 bytes, expected uint32"));
}

TEST_CASE("gguf: every malformed header is refused with its reason", "[model][gguf]") {
  const std::string ok = OneTensor().Build();
  REQUIRE(OpenError(ok).empty());
  CHECK_THAT(OpenError(""), Contains("too short for a GGUF file"));
  CHECK_THAT(OpenError("GGU"), Contains("too short for a GGUF file"));
  CHECK_THAT(OpenError("GGML" + ok.substr(4)), Contains("not a GGUF file"));
  // Big-endian: the version field reads as 0x03000000 on a little-endian host.
  std::string be = ok;
  be[4] = 0, be[5] = 0, be[6] = 0, be[7] = 3;
  CHECK_THAT(OpenError(be), Contains("big-endian GGUF file (version 3 stored byte-swapped)"));
  std::string v4 = ok;
  v4[4] = 4;
  CHECK_THAT(OpenError(v4), Contains("GGUF version 4 is not supported"));
  CHECK_THAT(OpenError(ok.substr(0, 10)), Contains("truncated header: tensor count at byte 8"));
  // Truncated anywhere in the header: the error names what was being read.
  for (size_t cut = 8; cut < ok.size() - 32; cut += 7) {
    CAPTURE(cut);
    CHECK_THAT(OpenError(ok.substr(0, cut)), Contains("model.gguf"));
  }
  CHECK_THAT(OpenError(ok.substr(0, ok.size() - 1)), Contains("reach beyond the data section"));

  GgufBuilder huge_t = OneTensor();
  huge_t.CountsOverride(uint64_t{1} << 60, 1);
  CHECK_THAT(OpenError(huge_t.Build()), Contains("claims 1152921504606846976 tensors"));
  GgufBuilder huge_kv = OneTensor();
  huge_kv.CountsOverride(1, uint64_t{1} << 63);
  CHECK_THAT(OpenError(huge_kv.Build()), Contains("claims 9223372036854775808 metadata entries"));

  auto with_kv = [](const std::string& key, uint32_t type, const std::string& value, uint32_t version = 3) {
    GgufBuilder b(version);
    b.Kv(key, type, value);
    return OpenError(b.Build());
  };
  std::string len;
  GgufBuilder::Num(len, uint64_t{1} << 40, 8);
  CHECK_THAT(with_kv("k", 8, len + "abc"), Contains("metadata 'k' at byte 37 has length 1099511627776"));
  std::string len32;
  GgufBuilder::Num(len32, 0xffffffffu, 4);
  CHECK_THAT(with_kv("k", 8, len32 + "abc", 1), Contains("has length 4294967295"));
  std::string arr;
  GgufBuilder::Num(arr, 6, 4);
  GgufBuilder::Num(arr, uint64_t{1} << 62, 8);
  CHECK_THAT(with_kv("k", 9, arr), Contains("claims 4611686018427387904 float32 elements"));
  std::string arr_of_str;
  GgufBuilder::Num(arr_of_str, 8, 4);
  GgufBuilder::Num(arr_of_str, 1000, 8);
  CHECK_THAT(with_kv("k", 9, arr_of_str + "xxxxxxxx"), Contains("claims 1000 string elements"));
  CHECK_THAT(with_kv("k", 13, "xxxx"), Contains("unknown value type 13"));
  std::string arr_bad_elem;
  GgufBuilder::Num(arr_bad_elem, 99, 4);
  GgufBuilder::Num(arr_bad_elem, 0, 8);
  CHECK_THAT(with_kv("k", 9, arr_bad_elem), Contains("unknown value type 99"));
  CHECK_THAT(with_kv("k", 7, "\2"), Contains("is a bool of value 2"));
  std::string bools;
  GgufBuilder::Num(bools, 7, 4);
  GgufBuilder::Num(bools, 2, 8);
  CHECK_THAT(with_kv("k", 9, bools + "\1\5"), Contains("element 1 is a bool of value 5"));
  // Arrays nested nine deep.
  std::string deep = std::string("\0\0\0\0", 4) + std::string(8, '\0');  // innermost: array[u8] of 0
  for (int k = 0; k < 9; ++k) {
    std::string outer;
    GgufBuilder::Num(outer, 9, 4);
    GgufBuilder::Num(outer, 1, 8);
    deep = outer + deep;
  }
  CHECK_THAT(with_kv("k", 9, deep), Contains("nests arrays deeper than 8 levels"));
  CHECK_THAT(with_kv("", 4, "xxxx"), Contains("metadata key 0 at byte 24 is empty"));
  CHECK_THAT(with_kv("bad\xff", 4, "xxxx"), Contains("metadata key 0 at byte 24 is not valid UTF-8"));
  {
    GgufBuilder b;
    b.U32("a", 1).U32("a", 2);
    CHECK_THAT(OpenError(b.Build()), Contains("metadata key 'a' at byte 41 appears twice"));
  }

  auto tensor_err = [](const std::string& name, std::vector<uint64_t> ne, uint32_t type, const std::string& data,
                       uint64_t offset = GgufBuilder::kAuto) {
    GgufBuilder b;
    b.Tensor(name, std::move(ne), type, data, offset);
    return OpenError(b.Build());
  };
  const std::string f32x4 = pc::test::F32Bytes({1, 2, 3, 4});
  CHECK_THAT(tensor_err("w", {}, 0, f32x4), Contains("tensor 'w' at byte 33 has 0 dimensions (expected 1 to 4)"));
  CHECK_THAT(tensor_err("w", {1, 1, 1, 1, 4}, 0, f32x4), Contains("has 5 dimensions"));
  CHECK_THAT(tensor_err("w", {4, 0}, 0, f32x4), Contains("tensor 'w': dimension 1 is 0"));
  CHECK_THAT(tensor_err("w", {uint64_t{1} << 32, uint64_t{1} << 32}, 0, f32x4),
             Contains("tensor 'w': dimensions overflow (dimension 1 = 4294967296"));
  CHECK_THAT(tensor_err("w", {uint64_t{1} << 31, uint64_t{1} << 31}, 28, f32x4),
             Contains("tensor 'w': byte size of 4611686018427387904 F64 elements overflows"));
  CHECK_THAT(tensor_err("w", {4}, 77, f32x4), Contains("tensor 'w' at byte 45 has unknown ggml type 77"));
  CHECK_THAT(tensor_err("w", {4}, 4, f32x4), Contains("unknown ggml type 4"));  // Q4_2, removed
  CHECK_THAT(tensor_err("w", {33}, 2, std::string(18, '\0')),
             Contains("tensor 'w': row length ne[0] = 33 is not a multiple of Q4_0's block of 32"));
  CHECK_THAT(tensor_err("w", {4}, 0, f32x4, 8), Contains("tensor 'w': offset 8 is not a multiple of the alignment 32"));
  CHECK_THAT(tensor_err("w", {8}, 0, f32x4), Contains("tensor 'w': 32 bytes at offset 0 reach beyond the data "
                                                      "section's 16 bytes"));
  CHECK_THAT(tensor_err("w", {4}, 0, f32x4, uint64_t{1} << 62), Contains("reach beyond the data section"));
  CHECK_THAT(tensor_err("w", {4}, 0, f32x4, UINT64_MAX - 31), Contains("reach beyond the data section"));  // offset 2^64 - 32
  CHECK_THAT(tensor_err("", {4}, 0, f32x4), Contains("tensor 0 name at byte 24 is empty"));
  CHECK_THAT(tensor_err("w\xc3(", {4}, 0, f32x4), Contains("tensor 0 name at byte 24 is not valid UTF-8"));
  {
    GgufBuilder b;
    b.Tensor("a", {8}, 0, std::string(32, '\0')).Tensor("b", {4}, 0, f32x4, 0);
    CHECK_THAT(OpenError(b.Build()), Contains("tensors 'a' [0, 32) and 'b' [0, 16) overlap"));
    GgufBuilder c;
    c.Tensor("a", {4}, 0, f32x4).Tensor("a", {4}, 0, f32x4);
    CHECK_THAT(OpenError(c.Build()), Contains("tensor 'a' at byte 57 appears twice"));
  }
  // Every error of a tensor names the file.
  CHECK_THAT(tensor_err("w", {4}, 77, f32x4), Contains("model.gguf: tensor 'w'"));
}

TEST_CASE("gguf: types perpcomp cannot dequantize are refused with the type's and the tensor's name",
          "[model][gguf]") {
  GgufBuilder b;
  b.Tensor("blk.0.ffn_up.weight", {256}, 16, std::string(66, '\0'));  // IQ2_XXS
  b.Tensor("ids", {4}, 26, std::string(16, '\0'));                    // I32
  auto f = pc::GgufFile::Open(WriteTemp(b.Build()));
  std::vector<float> out(256);
  CHECK_THROWS_WITH(f->ReadF32(f->header().tensors[0], out.data()),
                    Contains("tensor 'blk.0.ffn_up.weight' has type IQ2_XXS, which perpcomp cannot convert to f32 "
                             "(supported: F32, F16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, BF16)"));
  CHECK_THROWS_WITH(f->ReadF32(f->header().tensors[1], out.data()), Contains("tensor 'ids' has type I32"));
}

TEST_CASE("gguf: f16 and bf16 convert exactly", "[model][gguf]") {
  CHECK(pc::HalfToFloat(0x3c00) == 1.0f);
  CHECK(pc::HalfToFloat(0xc000) == -2.0f);
  CHECK(pc::HalfToFloat(0x7bff) == 65504.0f);
  CHECK(pc::HalfToFloat(0x0400) == std::ldexp(1.0f, -14));
  CHECK(pc::HalfToFloat(0x0001) == std::ldexp(1.0f, -24));
  CHECK(pc::HalfToFloat(0x03ff) == std::ldexp(1023.0f, -24));
  CHECK(pc::HalfToFloat(0x8000) == 0.0f);
  CHECK(std::signbit(pc::HalfToFloat(0x8000)));
  CHECK(std::isinf(pc::HalfToFloat(0xfc00)));
  CHECK(std::isnan(pc::HalfToFloat(0x7e00)));
  CHECK(pc::BFloat16ToFloat(0x3f80) == 1.0f);
  CHECK(pc::BFloat16ToFloat(0xc2f7) == -123.5f);
}

TEST_CASE("gguf: block formats decode by hand-computed answers", "[model][gguf]") {
  float y[256];
  // Q4_0: d = 0.5; qs[j] = j (low nibble) | (15 - j) << 4: element j = 0.5 (j - 8), j+16 = 0.5 (7 - j).
  std::string q40 = U16Bytes(0x3800);
  for (int j = 0; j < 16; ++j) q40.push_back(static_cast<char>(j | ((15 - j) << 4)));
  pc::DequantizeGgml(pc::GgmlType::kQ4_0, reinterpret_cast<const uint8_t*>(q40.data()), 32, y);
  for (int j = 0; j < 16; ++j) {
    CHECK(y[j] == 0.5f * (j - 8));
    CHECK(y[j + 16] == 0.5f * (7 - j));
  }
  // Q4_1: d = 2, m = -1: element = 2 q - 1.
  std::string q41 = U16Bytes(0x4000) + U16Bytes(0xbc00) + q40.substr(2);
  pc::DequantizeGgml(pc::GgmlType::kQ4_1, reinterpret_cast<const uint8_t*>(q41.data()), 32, y);
  CHECK(y[3] == 5.0f);
  CHECK(y[16 + 3] == 23.0f);
  // Q8_0: d = 0.25, q = -128, 127, 0, ...
  std::string q80 = U16Bytes(0x3400) + std::string("\x80\x7f", 2) + std::string(30, '\0');
  pc::DequantizeGgml(pc::GgmlType::kQ8_0, reinterpret_cast<const uint8_t*>(q80.data()), 32, y);
  CHECK(y[0] == -32.0f);
  CHECK(y[1] == 31.75f);
  CHECK(y[2] == 0.0f);
  // Q5_0: d = 1, qh bit 0 and bit 17 set, qs = 0: element 0 = 16 - 16 = 0, 17 = 0, others -16.
  std::string q50 = U16Bytes(0x3c00);
  GgufBuilder::Num(q50, (1u << 0) | (1u << 17), 4);
  q50 += std::string(16, '\0');
  pc::DequantizeGgml(pc::GgmlType::kQ5_0, reinterpret_cast<const uint8_t*>(q50.data()), 32, y);
  CHECK(y[0] == 0.0f);
  CHECK(y[1] == -16.0f);
  CHECK(y[17] == 0.0f);
  // Q6_K: all-zero quants, scales 1, d = 1: every element is -32; ql[0] = 0x0f sets element 0 to -17.
  std::string q6k(210, '\0');
  for (int g = 0; g < 16; ++g) q6k[192 + g] = 1;
  q6k[208] = 0x00, q6k[209] = 0x3c;
  q6k[0] = 0x0f;
  pc::DequantizeGgml(pc::GgmlType::kQ6_K, reinterpret_cast<const uint8_t*>(q6k.data()), 256, y);
  CHECK(y[0] == -17.0f);
  CHECK(y[1] == -32.0f);
  CHECK(y[255] == -32.0f);
}

TEST_CASE("gguf: dequantization is bit-exact against the gguf package", "[model][gguf][refenv]") {
  const std::string py = pc::test::GgufRefPython();
  PC_SKIP_IF(py.empty(), "the reference environment (PERPCOMP_REFENV) is absent");
  PC_SKIP_IF(pc::test::Run("'" + py + "' -c 'import gguf'").exit_code != 0,
             "the reference environment has no gguf package");
  const std::string dir = pc::test::TempDir("gguf-quants");
  auto r = pc::test::Run("'" + py + "' '" + pc::test::SourceDir() + "/tests/reference/gguf_reference.py' quants '" +
                         dir + "' --seed 7");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  nlohmann::json manifest = pc::LoadJsonFile(dir + "/manifest.json");
  auto f = pc::GgufFile::Open(dir + "/quants.gguf");
  std::set<std::string> types;
  for (const auto& m : manifest["tensors"]) {
    const std::string name = m["name"];
    CAPTURE(name);
    const pc::GgufTensorInfo* t = f->header().FindTensor(name);
    REQUIRE(t != nullptr);
    CHECK(std::string(pc::GgmlTypeName(t->type)) == m["type"].get<std::string>());
    CHECK(t->Shape() == m["shape"].get<std::vector<int64_t>>());
    std::vector<float> got(t->elements);
    f->ReadF32(*t, got.data());
    std::string want = pc::fs::ReadFile(dir + "/" + name + ".f32");
    REQUIRE(want.size() == got.size() * 4);
    int64_t differing = 0, first = -1;
    for (int64_t k = 0; k < t->elements; ++k) {
      if (std::memcmp(&got[k], want.data() + 4 * k, 4) != 0) {
        if (first < 0) first = k;
        ++differing;
      }
    }
    INFO("first differing element " << first);
    CHECK(differing == 0);
    types.insert(m["type"].get<std::string>());
  }
  // Every type perpcomp dequantizes was compared.
  CHECK(types.size() == 13);
}

TEST_CASE("gguf: the fuzz seeds' valid files open (versions 1, 2 and the gguf package's 3)", "[model][gguf]") {
  const std::string dir = pc::test::SourceDir() + "/tests/fuzz/corpus/gguf_header/";
  auto v1 = pc::GgufFile::Open(dir + "v1");
  CHECK(v1->header().version == 1);
  CHECK(v1->header().alignment == 64);
  CHECK(v1->header().Find("tokenizer.ggml.tokens")->strings == std::vector<std::string>{"a", "\xe2\x96\x81" "b"});
  std::vector<float> b(4);
  v1->ReadF32(*v1->header().FindTensor("b"), b.data());
  CHECK(b == std::vector<float>{5, 6, 7, 8});
  auto v2 = pc::GgufFile::Open(dir + "v2");
  CHECK(v2->header().version == 2);
  auto v3 = pc::GgufFile::Open(dir + "all-types-v3");
  CHECK(v3->header().version == 3);
  CHECK(v3->header().tensors.size() == 14);
  for (const char* hostile : {"hostile-big-endian", "hostile-huge-counts", "hostile-offset-past-end", "hostile-overlap",
                              "hostile-shape-overflow"}) {
    CAPTURE(hostile);
    CHECK_THROWS_AS(pc::GgufFile::Open(dir + hostile), pc::Error);
  }
}
