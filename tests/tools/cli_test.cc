// End-to-end tests of the perpcomp binary on the real files in ../shared.
#include <catch2/catch.hpp>

#include <fstream>
#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "core/sha256.h"
#include "tests/test_support.h"

using Catch::Matchers::Contains;
using pc::test::RunPerpcomp;

namespace {

// stories260K converted once per test binary run.
std::string Stories() { return pc::test::ConvertedStories(); }

std::string WriteFile(const std::string& name, const std::string& bytes) {
  std::string path = pc::test::TempDir("cli-files") + "/" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

}  // namespace

TEST_CASE("cli: help lists every verb and each verb's options with defaults", "[tools]") {
  auto r = RunPerpcomp("--help");
  CHECK(r.exit_code == 0);
  for (const char* verb : {"info", "convert", "generate", "eval", "compress"}) CHECK_THAT(r.out, Contains(verb));
  auto e = RunPerpcomp("eval --help");
  CHECK(e.exit_code == 0);
  CHECK_THAT(e.out, Contains("--seq-len") && Contains("(=0)") && Contains("--threads"));
  auto bad = RunPerpcomp("frobnicate");
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Contains("unknown command 'frobnicate'") && Contains("available:"));
}

// core/blas.h: an OpenBLAS that takes the CPU for a pre-AVX one is re-run with the fastest kernels
// the CPU has; a user's OPENBLAS_CORETYPE is left alone. `perpcomp version` prints the kernels and its LibTorch.
TEST_CASE("cli: OpenBLAS runs AVX2 or AVX-512 kernels where the CPU has them", "[tools]") {
  auto r = RunPerpcomp("version");
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("BLAS kernels: OpenBLAS "));
  CHECK_THAT(r.out, Contains("\nLibTorch "));  // the LibTorch it was built with
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    for (const char* generic : {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Atom", "Unknown"}) {
      INFO(r.out);
      CHECK_THAT(r.out, !Contains(std::string("BLAS kernels: OpenBLAS ") + generic));
    }
  }
  auto chosen = pc::test::Run("OPENBLAS_CORETYPE=Prescott " + pc::test::PerpcompBin() + " version");
  REQUIRE(chosen.exit_code == 0);
  CHECK_THAT(chosen.out, Contains("BLAS kernels: OpenBLAS Prescott (OPENBLAS_CORETYPE)"));
}

TEST_CASE("stories260K: greedy generation from BOS reproduces llama2.c's story", "[tools][shared]") {
  PC_REQUIRE_SHARED();
  auto r = RunPerpcomp("generate --model '" + Stories() + "' --prompt '' --max-new-tokens 200 --temperature 0");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::string text = r.out;
  if (!text.empty() && text.back() == '\n') text.pop_back();
  CHECK(text.size() == 464);
  CHECK(text.rfind("Once upon a time, there was a little girl named Lily.", 0) == 0);
  CHECK(pc::Sha256Hex(text) == "beeb5cb46785efee81a8545300b31e396b595e5ce6f3b77db201545501981d14");
}

TEST_CASE("stories260K: info, eval JSON keys and errors", "[tools][shared]") {
  PC_REQUIRE_SHARED();
  auto info = RunPerpcomp("info --model '" + Stories() + "'");
  REQUIRE(info.exit_code == 0);
  CHECK_THAT(info.out, Contains("llama") && Contains("260") && Contains("model.layers.4.mlp.down_proj"));
  std::string text = WriteFile("story.txt", "Once upon a time, there was a little girl named Lily. She loved to play "
                                            "outside in the park with her friends and her dog.\n");
  auto e = RunPerpcomp("eval --model '" + Stories() + "' --text '" + text + "' --seq-len 16 --json");
  INFO(e.err);
  REQUIRE(e.exit_code == 0);
  auto j = nlohmann::json::parse(e.out);
  for (const char* key : {"ppl", "mean_nll", "tokens", "windows", "seq_len", "text_sha256", "model"}) CHECK(j.contains(key));
  CHECK(j["tokens"].get<int64_t>() == j["windows"].get<int64_t>() * 15);
  CHECK(j["text_sha256"] == pc::Sha256Hex(pc::fs::ReadFile(text)));
  CHECK(j["ppl"].get<double>() > 1.0);
  CHECK(j["ppl"].get<double>() < 40.0);
  for (const char* k : {"tokenize", "load", "forward", "total"}) {
    INFO(k);
    REQUIRE(j["seconds"].contains(k));
    CHECK(j["seconds"][k].get<double>() >= 0);
    CHECK(j["seconds"][k].get<double>() <= j["seconds"]["total"].get<double>());
  }

  auto longer = RunPerpcomp("eval --model '" + Stories() + "' --text '" + text + "' --seq-len 500");
  CHECK(longer.exit_code == 1);
  CHECK_THAT(longer.err, Contains("fewer than one window of --seq-len 500"));
  auto missing = RunPerpcomp("eval --model '" + Stories() + "' --text /nonexistent.txt");
  CHECK_THAT(missing.err, Contains("'/nonexistent.txt' does not exist"));
  auto empty = RunPerpcomp("eval --model '" + Stories() + "' --text '" + WriteFile("empty.txt", "") + "'");
  CHECK_THAT(empty.err, Contains("is empty"));
  auto latin1 = RunPerpcomp("eval --model '" + Stories() + "' --text '" + WriteFile("l1.txt", "caf\xe9 au lait") + "'");
  CHECK_THAT(latin1.err, Contains("not UTF-8") && Contains("byte offset 3"));
  auto no_model = RunPerpcomp("eval --model /nonexistent --text '" + text + "'");
  CHECK_THAT(no_model.err, Contains("does not exist"));
}

TEST_CASE("stories260K: compress with RTN, dry-run, log readable by h5py", "[tools][shared]") {
  PC_REQUIRE_SHARED();
  auto dry = RunPerpcomp("compress --model '" + Stories() + "' --recipe rtn-w4g128 --dry-run");
  INFO(dry.err);
  REQUIRE(dry.exit_code == 0);
  for (int l = 0; l < 5; ++l) {
    for (const char* n : {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}) {
      CHECK_THAT(dry.out, Contains("model.layers." + std::to_string(l) + "." + (std::string(n).size() == 6 ? "self_attn." : "") + n) ||
                              Contains("model.layers." + std::to_string(l) + ".mlp." + n));
    }
  }
  CHECK_THAT(dry.out, Contains("lm_head") && Contains("35 of 35"));
  std::string out = pc::test::TempDir("cli-rtn") + "/rtn";
  auto c = RunPerpcomp("compress --model '" + Stories() + "' --recipe rtn-w4g128 --calib self:8 --calib-seq-len 64 --out '" + out + "'");
  INFO(c.err);
  REQUIRE(c.exit_code == 0);
  auto again = RunPerpcomp("compress --model '" + Stories() + "' --recipe rtn-w4g128 --calib self:8 --out '" + out + "'");
  CHECK(again.exit_code == 1);
  CHECK_THAT(again.err, Contains("already exists") && Contains("--overwrite"));
  auto e = RunPerpcomp("eval --model '" + out + "' --text '" + WriteFile("s.txt", std::string(400, 'a') + " Once upon a time.") +
                       "' --seq-len 32 --json");
  CHECK(e.exit_code == 0);
  auto cfg = nlohmann::json::parse(pc::fs::ReadFile(out + "/config.json"));
  CHECK(cfg["perpcomp_compression"]["recipe"] == "rtn-w4g128");
  CHECK(cfg["perpcomp_compression"]["calibration"]["windowing"] == "self");
  PC_SKIP_IF(pc::test::Run("/usr/bin/python3 -c 'import h5py'").exit_code != 0, "h5py absent");
  auto py = pc::test::Run("/usr/bin/python3 -c \"import h5py; f = h5py.File('" + out + "/compress.h5', 'r'); "
                          "t = f['linears']; print(f.attrs['perpcomp_kind'], len(t['name']), t['method'][0].decode(), "
                          "float(t['err_after'][0]) > 0)\"");
  INFO(py.err);
  CHECK(py.exit_code == 0);
  CHECK_THAT(py.out, Contains("compress-log 35 rtn True"));
}

TEST_CASE("compress: bad input gets clear errors", "[tools][shared]") {
  PC_REQUIRE_SHARED();
  std::string dir = pc::test::TempDir("cli-bad");
  auto bits = WriteFile("bits.yaml", "name: bad\nmethod: rtn\nparams:\n  bits: 9\n");
  auto r = RunPerpcomp("compress --model '" + Stories() + "' --recipe '" + bits + "' --dry-run");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("bits.yaml:4") && Contains("'bits' = 9 is out of range (2..8)"));
  auto group = WriteFile("group.yaml", "name: bad\nmethod: rtn\nparams:\n  group_size: 0\n");
  CHECK_THAT(RunPerpcomp("compress --model '" + Stories() + "' --recipe '" + group + "' --dry-run").err,
             Contains("group.yaml:4") && Contains("group_size"));
  auto over = WriteFile("over.yaml", "name: bad\nmethod: rtn\noverrides:\n  - match: 'decoder\\.layers'\n    params: {bits: 8}\n");
  CHECK_THAT(RunPerpcomp("compress --model '" + Stories() + "' --recipe '" + over + "' --dry-run").err,
             Contains("over.yaml:4") && Contains("matches no linear"));
  auto method = WriteFile("m.yaml", "name: bad\nmethod: awk\n");
  CHECK_THAT(RunPerpcomp("compress --model '" + Stories() + "' --recipe '" + method + "' --dry-run").err,
             Contains("m.yaml:2") && Contains("unknown method 'awk'") && Contains("rtn"));
  auto yaml = WriteFile("y.yaml", "name: bad\nmethod: rtn\nparams: [\n");
  CHECK_THAT(RunPerpcomp("compress --model '" + Stories() + "' --recipe '" + yaml + "' --dry-run").err, Contains("y.yaml:"));
  auto shorttext = WriteFile("short.txt", "Once upon a time.\n");
  auto cal = RunPerpcomp("compress --model '" + Stories() + "' --recipe rtn-w4g128 --calib '" + shorttext +
                         "' --calib-samples 4 --calib-seq-len 64 --out '" + dir + "/o'");
  CHECK(cal.exit_code == 1);
  CHECK_THAT(cal.err, Contains("4 samples x 64 tokens"));
  CHECK_FALSE(pc::fs::Exists(dir + "/o"));
  auto none = RunPerpcomp("compress --model '" + Stories() + "' --recipe rtn-w4g128 --out '" + dir + "/o'");
  CHECK(none.exit_code == 1);
  CHECK_THAT(none.err, Contains("--calib is required") && Contains("recipe 'rtn-w4g128' names no calibration text"));
  auto zero = RunPerpcomp("compress --model '" + Stories() + "' --recipe rtn-w4g128 --calib self:0 --out '" + dir + "/o'");
  CHECK(zero.exit_code == 1);
  CHECK_THAT(zero.err, Contains("--calib 'self:0' must be self:N with N a positive number of windows"));
  auto absent = RunPerpcomp("compress --model '" + Stories() + "' --recipe rtn-w4g128 --calib /nonexistent.txt --dry-run");
  CHECK(absent.exit_code == 1);
  CHECK_THAT(absent.err, Contains("--calib '/nonexistent.txt' does not exist"));
  CHECK_FALSE(pc::fs::Exists(dir + "/o"));
}
