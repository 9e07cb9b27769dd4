// GGUF out (model/gguf_writer.h, model/gguf_export.h, compress/export.h ExportGguf): the writer
// against the reader; block encoders against the dequantizer; `compress --format gguf` on the real
// stories260K against perpcomp's reader, the `gguf` package and llama.cpp (llama-cpp-python).
#include <catch2/catch.hpp>

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "compress/quantizer.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/sha256.h"
#include "model/gguf_convert.h"
#include "model/gguf_format.h"
#include "model/gguf_quants.h"
#include "model/gguf_writer.h"
#include "model/model.h"
#include "model/tokenizer/tokenizer.h"
#include "tests/test_support.h"

using Catch::Matchers::Contains;

TEST_CASE("gguf writer: FloatToHalf rounds as ATen does (to nearest even, subnormals, overflow)",
          "[gguf][export]") {
  at::Generator g = at::detail::createCPUGenerator(7);
  at::Tensor x = at::cat({at::randn({20000}, g) * 1000, at::randn({20000}, g) * 1e-5, at::randn({2000}, g) * 1e-7,
                          at::tensor({0.f, -0.f, 65504.f, 65519.f, 65520.f, 1e9f, -1e9f, 5.96e-8f, 2.98e-8f, 1.0f + 1.0f / 2048})});
  at::Tensor h = x.to(at::kHalf);
  const float* xp = x.data_ptr<float>();
  const auto* hp = reinterpret_cast<const uint16_t*>(h.data_ptr());
  int64_t bad = 0;
  for (int64_t i = 0; i < x.numel(); ++i) bad += pc::FloatToHalf(xp[i]) != hp[i];
  CHECK(bad == 0);
  at::Tensor b = x.to(at::kBFloat16);
  const auto* bp = reinterpret_cast<const uint16_t*>(b.data_ptr());
  bad = 0;
  for (int64_t i = 0; i < x.numel(); ++i) bad += pc::FloatToBFloat16(xp[i]) != bp[i];
  CHECK(bad == 0);
}

TEST_CASE("gguf writer: Q4_0, Q4_1, Q8_0 blocks decode to d·(q−8), d·q + m, d·q", "[gguf][export]") {
  const int64_t blocks = 3;
  std::vector<uint8_t> q4(blocks * 32);
  std::vector<int8_t> q8(blocks * 32);
  for (size_t i = 0; i < q4.size(); ++i) {
    q4[i] = static_cast<uint8_t>((i * 7 + 3) % 16);
    q8[i] = static_cast<int8_t>(static_cast<int>((i * 37) % 256) - 128);
  }
  const std::vector<float> d = {0.125f, -3.5f, 1e-3f}, m = {-1.0f, 0.5f, 7.25f};
  std::vector<uint16_t> d16, m16;
  for (int b = 0; b < blocks; ++b) {
    d16.push_back(pc::FloatToHalf(d[b]));
    m16.push_back(pc::FloatToHalf(m[b]));
  }
  auto decode = [&](pc::GgmlType t, const std::vector<uint8_t>& bytes) {
    std::vector<float> out(blocks * 32);
    pc::DequantizeGgml(t, bytes.data(), blocks * 32, out.data());
    return out;
  };
  std::vector<uint8_t> b40(blocks * 18), b41(blocks * 20), b80(blocks * 34);
  pc::EncodeQ4_0(q4.data(), d16.data(), blocks, b40.data());
  pc::EncodeQ4_1(q4.data(), d16.data(), m16.data(), blocks, b41.data());
  pc::EncodeQ8_0(q8.data(), d16.data(), blocks, b80.data());
  const auto v40 = decode(pc::GgmlType::kQ4_0, b40), v41 = decode(pc::GgmlType::kQ4_1, b41),
             v80 = decode(pc::GgmlType::kQ8_0, b80);
  for (int64_t i = 0; i < blocks * 32; ++i) {
    const float dh = pc::HalfToFloat(d16[i / 32]), mh = pc::HalfToFloat(m16[i / 32]);
    CAPTURE(i);
    CHECK(v40[i] == (static_cast<float>(q4[i]) - 8.0f) * dh);
    CHECK(v41[i] == dh * static_cast<float>(q4[i]) + mh);
    CHECK(v80[i] == dh * static_cast<float>(q8[i]));
  }
}

TEST_CASE("gguf writer: metadata of every type and tensors read back by the reader", "[gguf][export]") {
  const std::string path = pc::test::TempDir("gguf-writer") + "/w.gguf";
  {
    pc::GgufWriter w(path, false);
    pc::GgufValue u8;
    u8.type = pc::GgufType::kU8;
    u8.u = 200;
    pc::GgufValue i64;
    i64.type = pc::GgufType::kI64;
    i64.i = -(int64_t{1} << 40);
    pc::GgufValue f64;
    f64.type = pc::GgufType::kF64;
    f64.f = 0.1;
    pc::GgufValue nested;
    nested.type = pc::GgufType::kArray;
    nested.elem = pc::GgufType::kArray;
    nested.count = 2;
    nested.arrays = {pc::GgufI32Array({1, -2}), pc::GgufStringArray({"x"})};
    w.AddMetadata("general.alignment", pc::GgufU32(64));
    w.AddMetadata("a.u8", u8);
    w.AddMetadata("a.i64", i64);
    w.AddMetadata("a.f64", f64);
    w.AddMetadata("a.f32", pc::GgufF32(1.5f));
    w.AddMetadata("a.bool", pc::GgufBool(true));
    w.AddMetadata("a.str", pc::GgufString("h\xC3\xA9llo"));
    w.AddMetadata("a.strs", pc::GgufStringArray({"", "b"}));
    w.AddMetadata("a.f32s", pc::GgufF32Array({0.5f, -2.f}));
    w.AddMetadata("a.nested", nested);
    w.DeclareTensor("t.f32", pc::GgmlType::kF32, {3, 2});
    w.DeclareTensor("t.q8", pc::GgmlType::kQ8_0, {32});
    CHECK_THROWS_WITH(w.DeclareTensor("t.bad", pc::GgmlType::kQ4_0, {48}), Contains("row length 48 is not a multiple"));
    const float f[6] = {1, 2, 3, 4, 5, 6};
    w.Write("t.f32", f, sizeof f);
    std::vector<uint8_t> q(34, 0);
    q[0] = 0x00;
    q[1] = 0x3C;  // d = 1
    for (int i = 0; i < 32; ++i) q[2 + i] = static_cast<uint8_t>(i - 16);
    w.Write("t.q8", q.data(), q.size());
    CHECK_FALSE(pc::fs::Exists(path));  // staged until Finish
    w.Finish();
  }
  auto f = pc::GgufFile::Open(path);
  const pc::GgufHeader& h = f->header();
  CHECK(h.version == 3);
  CHECK(h.alignment == 64);
  CHECK(h.data_offset % 64 == 0);
  CHECK(f->Int("a.u8") == 200);
  CHECK(f->Int("a.i64") == -(int64_t{1} << 40));
  CHECK(f->Float("a.f64") == 0.1);
  CHECK(f->Float("a.f32") == 1.5);
  CHECK(f->BoolOr("a.bool", false));
  CHECK(f->String("a.str") == "h\xC3\xA9llo");
  CHECK(f->Find("a.strs")->strings == std::vector<std::string>{"", "b"});
  CHECK(f->Find("a.f32s")->FloatAt(1) == -2.0);
  CHECK(f->Find("a.nested")->arrays.at(0).IntAt(1, "") == -2);
  CHECK(f->Find("a.nested")->arrays.at(1).strings.at(0) == "x");
  const pc::GgufTensorInfo* t = h.FindTensor("t.f32");
  REQUIRE(t != nullptr);
  CHECK(t->Shape() == std::vector<int64_t>{2, 3});
  std::vector<float> v(6);
  f->ReadF32(*t, v.data());
  CHECK(v == std::vector<float>{1, 2, 3, 4, 5, 6});
  std::vector<float> q8(32);
  f->ReadF32(*h.FindTensor("t.q8"), q8.data());
  CHECK(q8[0] == -16.0f);
  CHECK(q8[31] == 15.0f);
}

TEST_CASE("gguf writer: a failed write leaves nothing under the final name", "[gguf][export][shared]") {
  // RLIMIT_FSIZE makes the write fail with EFBIG, as ENOSPC on a full disk.
  PC_REQUIRE_SHARED();
  const std::string dir = pc::test::TempDir("gguf-limit");
  const std::string s = pc::test::ConvertedStories();
  pc::test::RunResult r = pc::test::RunWithFileLimit(
      "'" + pc::test::PerpcompBin() + "' convert --to gguf --model '" + s + "' --out '" + dir + "/m.gguf'", 100000);
  INFO(r.out << r.err);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.err, Contains("file size limit reached writing '" + dir + "/m.gguf'"));
  CHECK_FALSE(pc::fs::Exists(dir + "/m.gguf"));
  pc::test::RunResult u = pc::test::RunPerpcomp("convert --to gguf --model '" + s + "' --out /proc/m.gguf");
  CHECK(u.exit_code != 0);
}

namespace {

std::string Sh(const std::string& s) { return "'" + s + "'"; }

void WriteRecipe(const std::string& path, const std::string& name, int bits, bool zero_point, int64_t group,
                 bool ignore_down, const std::string& method = "rtn") {
  std::ofstream f(path);
  f << "name: " << name << "\nmethod: " << method << "\nparams:\n  bits: " << bits << "\n  group_size: " << group
    << "\n  zero_point: " << (zero_point ? "true" : "false") << "\n";
  if (ignore_down) f << "ignore:\n  - 'mlp\\.down_proj'\n";
}

// Every tensor of folder `a` against `b` (Hugging Face names): max |a − b| / max(1, |b|max).
double MaxDiff(pc::Model& a, pc::Model& b, double* max_abs) {
  std::map<std::string, at::Tensor> tb;
  b.ForEachTensor([&](const std::string& n, const at::Tensor& t, pc::StDType) { tb[n] = t.to(at::kFloat).clone(); });
  double worst = 0;
  *max_abs = 0;
  a.ForEachTensor([&](const std::string& n, const at::Tensor& t, pc::StDType) {
    INFO(n);
    REQUIRE(tb.count(n) == 1);
    const double d = (t.to(at::kFloat) - tb[n]).abs().max().item<double>();
    *max_abs = std::max(*max_abs, d);
    worst = std::max(worst, d / std::max(1.0, tb[n].abs().max().item<double>()));
  });
  return worst;
}

bool HaveLlamaCpp() {
  static int have = -1;
  if (have < 0) {
    have = !pc::test::RefPython().empty() &&
           pc::test::Run(Sh(pc::test::RefPython()) + " -c 'import llama_cpp'").exit_code == 0;
  }
  return have == 1;
}

struct LogitDiff {
  double max_abs = 0, nll_ours = 0, nll_llama = 0;
};

// llama.cpp's logits on `file` (tests/reference/gguf_llamacpp.py) against perpcomp's forward of
// `model` on the same ids, and the mean next-token NLL of both.
LogitDiff CompareWithLlamaCpp(const std::string& file, pc::Model& model, const std::vector<int64_t>& ids,
                              const std::string& tmp) {
  const std::string toks = tmp + ".tokens", lf = tmp + ".f32";
  {
    std::ofstream o(toks);
    for (int64_t id : ids) o << id << " ";
  }
  pc::test::RunResult l =
      pc::test::RunRefPython("tests/reference/gguf_llamacpp.py", "logits " + Sh(file) + " " + Sh(toks) + " " + Sh(lf));
  INFO(l.err);
  REQUIRE(l.exit_code == 0);
  const std::string raw = pc::fs::ReadFile(lf);
  const int64_t n = static_cast<int64_t>(ids.size()), vocab = model.config().vocab_size;
  REQUIRE(raw.size() == static_cast<size_t>(n * vocab * 4));
  at::Tensor ll = at::empty({n, vocab}, at::kFloat);
  std::memcpy(ll.data_ptr(), raw.data(), raw.size());
  at::Tensor ours = model.Forward(at::tensor(ids, at::kLong).unsqueeze(0))[0].to(at::kFloat);
  at::Tensor tgt = at::tensor(std::vector<int64_t>(ids.begin() + 1, ids.end()), at::kLong);
  auto nll = [&](const at::Tensor& lg) {
    return -at::log_softmax(lg.narrow(0, 0, n - 1), 1).gather(1, tgt.unsqueeze(1)).mean().item<double>();
  };
  LogitDiff d;
  d.max_abs = (ll - ours).abs().max().item<double>();
  d.nll_ours = nll(ours);
  d.nll_llama = nll(ll);
  return d;
}

// A TinyStories-like passage through the folder's tokenizer (with BOS).
std::vector<int64_t> StoryIds(const std::string& folder) {
  const std::string text =
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends. "
      "One day, she saw a big red ball under a tree. She ran to get it, but a dog took it first. Lily was sad, but "
      "then the dog brought the ball back to her.";
  std::vector<int64_t> ids = {1};
  for (int32_t id : pc::LoadTokenizer(folder)->Encode(text)) ids.push_back(id);
  return ids;
}

}  // namespace

TEST_CASE("convert --to gguf: stories260K F32 round trip is exact, tokenizer ids equal", "[gguf][export][shared][slow]") {
  PC_REQUIRE_SHARED();
  const std::string dir = pc::test::TempDir("gguf-convert");
  const std::string s = pc::test::ConvertedStories();
  pc::test::RunResult w = pc::test::RunPerpcomp("convert --to gguf --outtype f32 --model " + Sh(s) + " --out " + Sh(dir + "/s.gguf"));
  INFO(w.err);
  REQUIRE(w.exit_code == 0);
  REQUIRE(pc::test::RunPerpcomp("convert --from gguf --weights " + Sh(dir + "/s.gguf") + " --out " + Sh(dir + "/back")).exit_code == 0);
  auto a = pc::Model::Load(dir + "/back");
  auto b = pc::Model::Load(s);
  double max_abs = 1;
  MaxDiff(*a, *b, &max_abs);
  CHECK(max_abs == 0);
  const std::string text = "Once upon a time, there was a little girl named Lily. She liked to play outside!\n\nThe end.";
  CHECK(pc::LoadTokenizer(dir + "/back")->Encode(text) == pc::LoadTokenizer(s)->Encode(text));
  // F16 by default: every 2-D tensor F16, norms F32.
  REQUIRE(pc::test::RunPerpcomp("convert --to gguf --model " + Sh(s) + " --out " + Sh(dir + "/h.gguf")).exit_code == 0);
  auto f = pc::GgufFile::Open(dir + "/h.gguf");
  CHECK(f->header().FindTensor("blk.0.attn_q.weight")->type == pc::GgmlType::kF16);
  CHECK(f->header().FindTensor("blk.0.attn_norm.weight")->type == pc::GgmlType::kF32);
  CHECK(f->String("general.name") == "stories");
  CHECK(f->String("tokenizer.ggml.model") == "llama");
  // An existing output needs --overwrite; bad options are refused.
  pc::test::RunResult again = pc::test::RunPerpcomp("convert --to gguf --model " + Sh(s) + " --out " + Sh(dir + "/h.gguf"));
  CHECK(again.exit_code != 0);
  CHECK_THAT(again.err, Contains("already exists"));
  pc::test::RunResult bad = pc::test::RunPerpcomp("convert --to gguf --outtype q4 --model " + Sh(s) + " --out " + Sh(dir + "/q.gguf"));
  CHECK_THAT(bad.err, Contains("--outtype 'q4' is not supported (supported: f32, f16, bf16)"));
}

TEST_CASE("compress --format gguf: stories260K as Q4_0 / Q4_1 / Q8_0 read back by perpcomp, gguf and llama.cpp",
          "[gguf][export][shared][slow]") {
  PC_REQUIRE_SHARED();
  const std::string dir = pc::test::TempDir("gguf-stories");
  const std::string s = pc::test::ConvertedStories();
  const std::string calib = pc::test::SharedPath("text/tinyshakespeare/input.txt");
  auto compress = [&](const std::string& recipe, const std::string& out, const std::string& extra) {
    return pc::test::RunPerpcomp("compress --model " + Sh(s) + " --recipe " + Sh(recipe) + " --calib " + Sh(calib) +
                                 " --calib-samples 4 --calib-seq-len 64 --format gguf --out " + Sh(out) + " " + extra);
  };
  // Refusals by name, before any compute: down_proj's 172 inputs, group 48, 3 bits, 8 bits asymmetric.
  struct Refusal {
    int bits;
    bool zp;
    int64_t group;
    bool ignore_down;
    const char* message;
  };
  for (const Refusal& r : {Refusal{4, true, 32, false, "model.layers.0.mlp.down_proj (in_features 172, group 32: not a multiple of Q4_1's block of 32)"},
                           Refusal{4, false, 48, true, "model.layers.0.self_attn.q_proj (group_size 48 is not a multiple of Q4_0's block of 32)"},
                           Refusal{3, true, 32, true, "model.layers.0.self_attn.q_proj (rtn w3 g32 asym: no llama.cpp block type of this width)"},
                           Refusal{8, true, 32, true, "(rtn w8 g32 asym: Q8_0 has no zero point)"}}) {
    const std::string recipe = dir + "/refuse.yaml";
    WriteRecipe(recipe, "refuse", r.bits, r.zp, r.group, r.ignore_down);
    pc::test::RunResult res = compress(recipe, dir + "/refused", "");
    INFO(res.err);
    CHECK(res.exit_code != 0);
    CHECK_THAT(res.err, Contains(r.message));
    CHECK_FALSE(pc::fs::Exists(dir + "/refused"));
  }

  // A pruned model: the sparse weights as F16 (the default), their zeros kept.
  {
    pc::test::RunResult res = compress("magnitude-50", dir + "/mag", "");
    INFO(res.err);
    REQUIRE(res.exit_code == 0);
    auto f = pc::GgufFile::Open(dir + "/mag/model.gguf");
    const pc::GgufTensorInfo* t = f->header().FindTensor("blk.0.ffn_down.weight");
    REQUIRE(t != nullptr);
    CHECK(t->type == pc::GgmlType::kF16);
    std::vector<float> v(t->elements);
    f->ReadF32(*t, v.data());
    const auto zeros = std::count(v.begin(), v.end(), 0.0f);
    CHECK(zeros >= t->elements / 2);
  }

  struct Case {
    int bits;
    bool zp;
    int64_t group;
    const char* type;
    const char* method = "rtn";
  };
  const bool have_llama = HaveLlamaCpp();
  for (const Case& k : {Case{4, false, 32, "Q4_0"}, Case{4, true, 32, "Q4_1"}, Case{8, false, 32, "Q8_0"},
                        Case{4, true, 64, "Q4_1"}, Case{4, true, 32, "Q4_1", "awq"}, Case{4, false, 32, "Q4_0", "gptq"},
                        Case{4, true, 32, "Q4_1", "gptq"}}) {
    INFO(k.method << " " << k.type << " group " << k.group);
    const std::string name = std::string(k.method) + "-" + k.type + "-g" + std::to_string(k.group);
    const std::string recipe = dir + "/" + name + ".yaml";
    WriteRecipe(recipe, name, k.bits, k.zp, k.group, true, k.method);
    const std::string out = dir + "/" + name;
    pc::test::RunResult res = compress(recipe, out, "--gguf-outtype f32");
    INFO(res.err);
    REQUIRE(res.exit_code == 0);
    const std::string file = out + "/model.gguf";
    auto f = pc::GgufFile::Open(file);
    CHECK(f->String("general.architecture") == "llama");
    CHECK(GgmlTypeName(f->header().FindTensor("blk.0.attn_q.weight")->type) == std::string(k.type));
    CHECK(GgmlTypeName(f->header().FindTensor("blk.0.ffn_down.weight")->type) == std::string("F32"));
    // perpcomp's reader: the fake-quantized folder, up to the float16 rounding of d (and m).
    const std::string back = dir + "/" + name + "-back";
    REQUIRE(pc::test::RunPerpcomp("convert --from gguf --weights " + Sh(file) + " --out " + Sh(back)).exit_code == 0);
    auto a = pc::Model::Load(back);
    auto b = pc::Model::Load(out);
    double max_abs = 0;
    const double rel = MaxDiff(*a, *b, &max_abs);
    // |d·q − s·q| ≤ 2^−11 |s q| ≤ 2^−11 · |w|max per value (Q4_0, Q8_0); Q4_1 adds m's rounding:
    // ≤ 2 · 2^−11 · 15 s ≤ 2^−10 · range. Relative to the tensor's largest value: 2^−10.
    CHECK(rel <= std::ldexp(1.0, -10));
    CHECK(max_abs > 0);  // the scales are rounded (no exact copy by accident)
    // The gguf package reads the same values as perpcomp's reader, bit for bit.
    if (!pc::test::RefPython().empty()) {
      const std::string js = dir + "/" + name + ".json";
      pc::test::RunResult g = pc::test::RunRefPython("tests/reference/gguf_llamacpp.py", "tensors " + Sh(file) + " " + Sh(js));
      INFO(g.err);
      REQUIRE(g.exit_code == 0);
      const nlohmann::json ref = nlohmann::json::parse(pc::fs::ReadFile(js));
      CHECK(ref["tensors"].size() == f->header().tensors.size());
      for (const pc::GgufTensorInfo& t : f->header().tensors) {
        INFO(t.name);
        std::vector<float> v(t.elements);
        f->ReadF32(t, v.data());
        CHECK(ref["tensors"][t.name]["type"] == GgmlTypeName(t.type));
        CHECK(ref["tensors"][t.name]["sha256"] ==
              pc::Sha256Hex(std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4)));
      }
      CHECK(ref["metadata"]["llama.block_count"] == 5);
      CHECK(ref["metadata"]["tokenizer.ggml.model"] == "llama");
    }
    // llama.cpp's logits against perpcomp's forward of the fake-quantized folder: on an F32 file of
    // that folder (the writer's layout and metadata, with float32 arithmetic on both sides), and on
    // the quantized file (llama.cpp's quantized dot products also round the activations to Q8_0).
    if (have_llama) {
      const std::vector<int64_t> ids = StoryIds(s);
      REQUIRE(pc::test::RunPerpcomp("convert --to gguf --outtype f32 --model " + Sh(out) + " --out " +
                                    Sh(out + "-f32.gguf")).exit_code == 0);
      const LogitDiff f = CompareWithLlamaCpp(out + "-f32.gguf", *b, ids, dir + "/" + name + "-f32");
      const LogitDiff q = CompareWithLlamaCpp(file, *b, ids, dir + "/" + name);
      WARN(k.method << " " << k.type << " g" << k.group << ", " << ids.size() << " tokens: perpcomp NLL " << q.nll_ours
                  << "; llama.cpp on the F32 file: max |dlogit| " << f.max_abs << ", dNLL " << f.nll_llama - f.nll_ours
                  << "; on the " << k.type << " file: max |dlogit| " << q.max_abs << ", dNLL " << q.nll_llama - q.nll_ours);
      CHECK(f.max_abs < 1e-3);
      CHECK(std::abs(f.nll_llama - f.nll_ours) < 1e-5);
      CHECK(q.max_abs < 0.5);
      CHECK(std::abs(q.nll_llama - q.nll_ours) < 0.02);
    }
  }
  PC_SKIP_IF(!have_llama, "llama_cpp (llama-cpp-python) is not importable in the reference environment: the llama.cpp "
                          "logit comparison did not run");
}

TEST_CASE("compress --format gguf: SmolLM2-135M RTN w4 g32 in llama.cpp equals perpcomp's fake-quantized forward",
          "[gguf][export][shared][slow]") {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  const std::string smol = (xdg != nullptr && *xdg ? std::string(xdg) : std::string(home != nullptr ? home : "") + "/.cache") +
                           "/perpcomp/models/smollm2-135m-instruct";
  PC_SKIP_IF(!pc::fs::Exists(smol + "/config.json"), "SmolLM2-135M-Instruct is not converted (tools/fetch-models.sh)");
  PC_REQUIRE_SHARED();
  PC_SKIP_IF(!HaveLlamaCpp(), "llama_cpp (llama-cpp-python) is not importable in the reference environment");
  const std::string dir = pc::test::TempDir("gguf-smollm");
  // Text ids through perpcomp's own tokenizer of the folder: a WikiText-2 passage.
  auto tok = pc::LoadTokenizer(smol);
  std::string text = pc::fs::ReadFile(pc::test::SharedPath("text/wikitext-2/wiki.test.raw.txt")).substr(0, 4000);
  std::vector<int64_t> ids;
  for (int32_t id : tok->Encode(text)) ids.push_back(id);
  ids.resize(std::min<size_t>(ids.size(), 256));
  for (bool zp : {false, true}) {
    const std::string name = zp ? "smol-q41" : "smol-q40";
    const std::string recipe = dir + "/" + name + ".yaml";
    WriteRecipe(recipe, name, 4, zp, 32, false);
    const std::string out = dir + "/" + name;
    pc::test::RunResult res = pc::test::RunPerpcomp(
        "compress --model " + Sh(smol) + " --recipe " + Sh(recipe) + " --calib " +
        Sh(pc::test::SharedPath("text/c4-sample/c4_sample.jsonl")) +
        " --calib-samples 2 --calib-seq-len 64 --format gguf --gguf-outtype f32 --out " + Sh(out));
    INFO(res.err);
    REQUIRE(res.exit_code == 0);
    auto m = pc::Model::Load(out);
    REQUIRE(pc::test::RunPerpcomp("convert --to gguf --outtype f32 --model " + Sh(out) + " --out " +
                                  Sh(out + "-f32.gguf")).exit_code == 0);
    const LogitDiff f = CompareWithLlamaCpp(out + "-f32.gguf", *m, ids, dir + "/" + name + "-f32");
    const LogitDiff q = CompareWithLlamaCpp(out + "/model.gguf", *m, ids, dir + "/" + name);
    WARN(name << ", " << ids.size() << " tokens: perpcomp NLL " << q.nll_ours << "; llama.cpp on the F32 file: max |dlogit| "
              << f.max_abs << ", dNLL " << f.nll_llama - f.nll_ours << "; on the quantized file: max |dlogit| "
              << q.max_abs << ", dNLL " << q.nll_llama - q.nll_ours);
    CHECK(f.max_abs < 0.01);
    CHECK(std::abs(f.nll_llama - f.nll_ours) < 1e-4);
    CHECK(q.max_abs < 3.0);
    CHECK(std::abs(q.nll_llama - q.nll_ours) < 0.01);
  }
}
