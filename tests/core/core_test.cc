#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "core/cpu_features.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/json_util.h"
#include "core/progress.h"
#include "core/sha256.h"
#include "core/strings.h"
#include "core/text.h"
#include "tests/test_support.h"

using Catch::Matchers::Contains;

namespace {
void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f << bytes;
}
}  // namespace

TEST_CASE("sha256 known answers", "[core]") {
  CHECK(pc::Sha256Hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(pc::Sha256Hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  std::string million(1000000, 'a');
  CHECK(pc::Sha256Hex(million) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  pc::Sha256 h;  // streaming in odd chunks equals one shot
  for (size_t i = 0; i < million.size(); i += 777) h.Update(million.data() + i, std::min<size_t>(777, million.size() - i));
  CHECK(h.HexDigest() == pc::Sha256Hex(million));
}

TEST_CASE("utf8 validation names the first bad byte", "[core]") {
  CHECK(pc::FindInvalidUtf8("plain ascii") == std::string::npos);
  CHECK(pc::FindInvalidUtf8("caf\xc3\xa9 \xe2\x96\x81 \xf0\x9f\x98\x80") == std::string::npos);
  CHECK(pc::FindInvalidUtf8("ab\xff") == 2);
  CHECK(pc::FindInvalidUtf8("ab\xc3") == 2);            // truncated
  CHECK(pc::FindInvalidUtf8("\xc0\xaf") == 0);          // overlong
  CHECK(pc::FindInvalidUtf8("x\xed\xa0\x80") == 1);     // surrogate
}

TEST_CASE("text sources: plain, JSON lines and their errors", "[core]") {
  std::string dir = pc::test::TempDir("text");
  WriteBytes(dir + "/a.txt", "hello world\n");
  auto src = pc::ReadTextSource(dir + "/a.txt");
  CHECK(src.text == "hello world\n");
  CHECK(src.sha256 == pc::Sha256Hex("hello world\n"));

  WriteBytes(dir + "/b.jsonl", "{\"text\": \"one\"}\n\n{\"text\": \"two\", \"x\": 1}\n");
  CHECK(pc::ReadTextSource(dir + "/b.jsonl").text == "one\n\ntwo");

  WriteBytes(dir + "/empty.txt", "");
  CHECK_THROWS_WITH(pc::ReadTextSource(dir + "/empty.txt"), Contains("is empty"));
  CHECK_THROWS_WITH(pc::ReadTextSource(dir + "/missing.txt"), Contains("does not exist"));
  WriteBytes(dir + "/bad.txt", "good\xfe");
  CHECK_THROWS_WITH(pc::ReadTextSource(dir + "/bad.txt"), Contains("byte offset 4"));
  WriteBytes(dir + "/c.jsonl", "{\"text\": \"one\"}\n{\"body\": \"two\"}\n");
  CHECK_THROWS_WITH(pc::ReadTextSource(dir + "/c.jsonl"), Contains("line 2") && Contains("missing field 'text'"));
  WriteBytes(dir + "/d.jsonl", "{\"text\": \"one\"}\n{oops\n");
  CHECK_THROWS_WITH(pc::ReadTextSource(dir + "/d.jsonl"), Contains("line 2") && Contains("invalid JSON"));
  WriteBytes(dir + "/e.jsonl", "{\"text\": 5}\n");
  CHECK_THROWS_WITH(pc::ReadTextSource(dir + "/e.jsonl"), Contains("expected a string"));
}

TEST_CASE("json errors name the file, position and depth", "[core]") {
  CHECK_THROWS_WITH(pc::ParseJson("{\"a\": [1, 2", "x.json"), Contains("x.json") && Contains("invalid JSON"));
  std::string deep(1000, '[');
  CHECK_THROWS_WITH(pc::ParseJson(deep, "deep.json"), Contains("nested deeper"));
  auto j = pc::ParseJson("{\"n\": 3, \"s\": \"x\"}", "ok.json");
  CHECK(pc::JsonInt(j, "n", "ok.json") == 3);
  CHECK_THROWS_WITH(pc::JsonInt(j, "s", "ok.json"), Contains("'s' is string, expected an integer"));
  CHECK_THROWS_WITH(pc::JsonInt(j, "m", "ok.json"), Contains("missing key 'm'"));
}

TEST_CASE("option parsers", "[core]") {
  CHECK(pc::ParseDoubleList("0, 0.5,1", "--alpha") == std::vector<double>{0, 0.5, 1});
  CHECK_THROWS_WITH(pc::ParseDoubleList("0,x", "--alpha"), Contains("--alpha") && Contains("'x'"));
  CHECK(pc::ParseRange("2-5", "--layers") == std::make_pair(2, 5));
  CHECK(pc::ParseRange("3", "--layers") == std::make_pair(3, 3));
  CHECK_THROWS(pc::ParseRange("5-2", "--layers"));
  CHECK(pc::ParseShard("1/4", "--shard") == std::make_pair(1, 4));
  CHECK_THROWS_WITH(pc::ParseShard("4/4", "--shard"), Contains("0 <= K < N"));
  int64_t n = 0;
  CHECK_FALSE(pc::ParseSelfSpec("c4.jsonl", "--calib", &n));
  CHECK((pc::ParseSelfSpec("self:32", "--calib", &n) && n == 32));
  for (const char* bad : {"self:", "self:0", "self:-1", "self:x", "self:12345678", "self: 4"}) {
    CHECK_THROWS_WITH(pc::ParseSelfSpec(bad, "--calib", &n),
                      "--calib '" + std::string(bad) +
                          "' must be self:N with N a positive number of windows (at most 9999999)");
  }
  CHECK(pc::ParseBytes("2G", "--max-memory") == 2LL * 1024 * 1024 * 1024);
  CHECK(pc::ParseBytes("512MB", "--max-memory") == 512LL * 1024 * 1024);
}

TEST_CASE("staged outputs are renamed into place and refuse to overwrite", "[core]") {
  std::string dir = pc::test::TempDir("staged");
  std::string out = dir + "/out";
  {
    pc::fs::StagedDir staged(out, /*overwrite=*/false);
    WriteBytes(staged.path() + "/f", "1");
    CHECK_FALSE(pc::fs::Exists(out));
    staged.Commit();
  }
  CHECK(pc::fs::ReadFile(out + "/f") == "1");
  CHECK_THROWS_WITH(pc::fs::StagedDir(out, false), Contains("already exists") && Contains("--overwrite"));
  {
    pc::fs::StagedDir staged(out, /*overwrite=*/true);
    WriteBytes(staged.path() + "/f", "2");
    // not committed: the old output stays
  }
  CHECK(pc::fs::ReadFile(out + "/f") == "1");
  {
    pc::fs::StagedDir staged(out, true);
    WriteBytes(staged.path() + "/f", "3");
    staged.Commit();
  }
  CHECK(pc::fs::ReadFile(out + "/f") == "3");
  // Temporaries of a process that is gone are removed; a live process's, and other names, are kept.
  pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ::waitpid(gone, nullptr, 0);
  const std::string dead = out + ".tmp-" + std::to_string(gone) + "-0", live = out + ".tmp-" + std::to_string(::getpid()) + "-99";
  for (const std::string& d : {dead, dead + ".old", live, out + ".tmp-x-1"}) pc::fs::MakeDirs(d);
  {
    pc::fs::StagedDir staged(out, true);
    CHECK_FALSE(pc::fs::Exists(dead));
    CHECK_FALSE(pc::fs::Exists(dead + ".old"));
    CHECK(pc::fs::Exists(live));
    CHECK(pc::fs::Exists(out + ".tmp-x-1"));
  }
  pc::fs::WriteFileAtomic(dir + "/file", "abc");
  CHECK(pc::fs::ReadFile(dir + "/file") == "abc");
  CHECK(pc::fs::IsInside(dir, dir + "/out/f"));
  CHECK_FALSE(pc::fs::IsInside(dir + "/out", dir + "/out/../file"));
}

namespace {
// What a Progress sequence writes to stderr with PERPCOMP_PROGRESS=1, run in a child process
// (its stderr a file).
std::string ProgressOutput(const std::function<void()>& body) {
  const std::string path = pc::test::TempDir("progress") + "/stderr.txt";
  pid_t pid = fork();
  if (pid == 0) {
    FILE* f = std::freopen(path.c_str(), "w", stderr);
    if (f == nullptr) _exit(2);
    setenv("PERPCOMP_PROGRESS", "1", 1);
    body();
    std::fflush(stderr);
    _exit(0);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

TEST_CASE("progress: a SubProgress ticks inside the current item of the innermost Progress", "[core]") {
  const std::string out = ProgressOutput([] {
    pc::Progress blocks("compress", 2, "blocks");
    {
      pc::SubProgress cols("gptq columns model.layers.0.mlp.up_proj", 4);
      for (int i = 0; i < 3; ++i) cols.Add();
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      cols.Add();  // 4/4, 250 ms after the last drawing: drawn on the block line
    }
    blocks.Add();
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    {
      pc::SubProgress cols("gptq columns model.layers.1.mlp.up_proj", 2);
      cols.Add();
      blocks.Add();  // the block is done: its line no longer shows the inner walk
    }
  });
  CHECK_THAT(out, Contains("compress: 0/2 blocks"));
  CHECK_THAT(out, Contains("| gptq columns model.layers.0.mlp.up_proj 4/4"));
  CHECK_THAT(out, Contains("ETA"));
  CHECK_THAT(out, Contains("compress: 2/2 blocks"));
  // The last line (after the final \r) has no inner part.
  const std::string last = out.substr(out.rfind('\r') + 1);
  CHECK_THAT(last, Contains("compress: 2/2 blocks"));
  CHECK(last.find('|') == std::string::npos);
}

TEST_CASE("progress: a SubProgress without a Progress on its thread, or in CI logs, writes nothing", "[core]") {
  CHECK(ProgressOutput([] {
          pc::SubProgress alone("awq grid", 3);
          for (int i = 0; i < 3; ++i) alone.Add();
        }).empty());
  CHECK(ProgressOutput([] {
          setenv("PERPCOMP_PROGRESS", "0", 1);
          pc::Progress quiet("compress", 1, "blocks");
          pc::SubProgress inner("awq grid", 3);
          for (int i = 0; i < 3; ++i) inner.Add();
          quiet.Add();
        }).empty());
  CHECK(ProgressOutput([] {
          pc::QuietProgress quiet;  // side-by-side work on this thread
          pc::Progress eval("eval", 2, "windows");
          eval.Add(2);
        }).empty());
  CHECK_FALSE(ProgressOutput([] {
                {
                  pc::QuietProgress quiet;
                }  // over: lines show again
                pc::Progress eval("eval", 2, "windows");
                eval.Add(2);
              }).empty());
}

TEST_CASE("cpu features: /proc/cpuinfo flags decide native bf16", "[core]") {
  const std::string epyc =
      "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\n"
      "flags\t\t: fpu sse sse2 avx avx2 fma bmi2\n\nprocessor\t: 1\nmodel name\t: other\nflags\t\t: avx512_bf16\n";
  pc::CpuFeatures a = pc::ParseCpuInfo(epyc);
  CHECK(a.read);
  CHECK(a.model == "AMD EPYC 7B13");
  CHECK(a.avx2);
  CHECK_FALSE(a.avx512f);
  CHECK_FALSE(a.avx512_bf16);  // only the first processor's lines count
  CHECK_FALSE(a.NativeBf16());
  CHECK_FALSE(a.FastBf16());
  CHECK(a.Summary() == "AMD EPYC 7B13; AVX2 yes, AVX-512 no, AVX512-VNNI no, AVX512-BF16 no, AMX-BF16 no");

  pc::CpuFeatures b = pc::ParseCpuInfo(
      "model name\t: Intel(R) Xeon(R) Platinum 8480+\nflags\t\t: avx2 avx512f avx512_vnni avx512_bf16 amx_bf16 amx_tile\n");
  CHECK(b.avx512f);
  CHECK(b.avx512_vnni);
  CHECK(b.avx512_bf16);
  CHECK(b.amx_bf16);
  CHECK(b.NativeBf16());
  CHECK(b.FastBf16());
  // AVX512-BF16 without AMX: bf16 instructions, but bf16 GEMMs slower than f32 ones.
  const pc::CpuFeatures c = pc::ParseCpuInfo("flags : avx2 avx512f avx512_bf16\n");
  CHECK(c.NativeBf16());
  CHECK_FALSE(c.FastBf16());
  // A flag is a whole word: "avx512_bf16x" or a substring is not the flag.
  CHECK_FALSE(pc::ParseCpuInfo("flags : avx512_bf16x xavx2\n").NativeBf16());
  CHECK_FALSE(pc::ParseCpuInfo("flags : avx512_bf16x xavx2\n").avx2);
  CHECK(pc::ParseCpuInfo("flags : amx_bf16\n").NativeBf16());
  // "flags" must be the key, not a prefix of another key.
  CHECK_FALSE(pc::ParseCpuInfo("flagsx : avx2\n").read);

  pc::CpuFeatures none = pc::ParseCpuInfo("");
  CHECK_FALSE(none.read);
  CHECK_FALSE(none.NativeBf16());
  CHECK_THAT(none.Summary(), Contains("flags unknown"));
  // This machine: read, and its summary names its model.
  CHECK(pc::HostCpu().read);
  CHECK_THAT(pc::HostCpu().Summary(), Contains(pc::HostCpu().model));
}
