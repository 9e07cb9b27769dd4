// tests/test_support.h — finding ../shared and the reference environment, temporary folders,
// running the perpcomp binary, skipping a test that cannot run.
#pragma once

#include <sstream>
#include <cstdint>
#include <string>

namespace pc::test {

// $PERPCOMP_SHARED/data, else <source>/../shared/data; "" when absent.
std::string SharedData();
// Path below SharedData(), or "" when the shared data is absent.
std::string SharedPath(const std::string& relative);
// A fresh empty folder under the build tree's test-tmp/, unique per call.
std::string TempDir(const std::string& name);
std::string SourceDir();
std::string BuildDir();
// The perpcomp binary of this build.
std::string PerpcompBin();

struct RunResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};
// Runs a shell command line, capturing stdout and stderr.
RunResult Run(const std::string& command_line);
// Runs `perpcomp <args>`.
RunResult RunPerpcomp(const std::string& args);
// ../shared's stories260K (llama2.c) converted with `perpcomp convert --from llama2c` once per test
// process, into a folder named `stories`; "" when the shared data is absent (PC_REQUIRE_SHARED first).
// A failed conversion throws std::runtime_error with perpcomp's message.
std::string ConvertedStories();
// Runs a shell command line with RLIMIT_FSIZE = `max_file_bytes` and SIGXFSZ ignored: a write past
// the limit fails with EFBIG, as one fails with ENOSPC on a full disk.
RunResult RunWithFileLimit(const std::string& command_line, uint64_t max_file_bytes);
// /usr/bin/python3 with torch available (false: skip the parity test).
bool HavePythonTorch();

// The reference Python environment (tools/setup-reference.sh): $PERPCOMP_REFENV, else the CMake
// cache variable PC_REFENV (<build>/pc_refenv.txt), else $XDG_CACHE_HOME/perpcomp/refenv.
std::string RefEnv();
// RefEnv()'s python when setup-reference.sh completed there (its stamp file exists), else "".
std::string RefPython();
// Runs `<RefPython()> <SourceDir()>/<script> <args>` (script relative to the source root).
RunResult RunRefPython(const std::string& script, const std::string& args);

// CI=true (.ci/run exports it): a test that cannot run fails instead of skipping.
bool InCi();
// The exit code of a skipped test; pc_add_test declares it as CTest's SKIP_RETURN_CODE.
constexpr int kSkipExitCode = 77;
// Under CTest (PERPCOMP_CTEST=1, one test case per process) prints the reason and ends the
// process with kSkipExitCode; run by hand, returns (the caller warns and returns).
void ExitSkipped(const std::string& reason);

}  // namespace pc::test

// Skips the rest of a test case with a message: CTest reports it as skipped (exit code 77),
// never passed. Under CI=true it fails: CI installs everything a test needs (tools/setup.sh,
// tools/setup-reference.sh, ../shared), so a skip there is a broken setup.
#define PC_SKIP_IF(cond, message)                                             \
  do {                                                                        \
    if (cond) {                                                               \
      std::ostringstream pc_skip_reason_;                                     \
      pc_skip_reason_ << message;                                             \
      if (::pc::test::InCi()) FAIL("cannot run under CI=true: " << pc_skip_reason_.str()); \
      ::pc::test::ExitSkipped(pc_skip_reason_.str());                         \
      WARN("skipped: " << pc_skip_reason_.str());                             \
      return;                                                                 \
    }                                                                         \
  } while (0)
#define PC_REQUIRE_SHARED() PC_SKIP_IF(::pc::test::SharedData().empty(), "../shared/data is absent (set PERPCOMP_SHARED)")
#define PC_REQUIRE_REFENV()                                                                     \
  PC_SKIP_IF(::pc::test::RefPython().empty(), "the reference environment " << ::pc::test::RefEnv() \
                                                  << " is not set up (run tools/setup-reference.sh)")

// Catch2's CHECK must be the one in force. LibTorch's headers bring glog's logging.h, whose
// CHECK(cond) aborts the process on a failure; included after <catch2/catch.hpp> it replaces
// Catch2's, and a test's CHECKs then neither report nor count. pc_add_test includes <ATen/ATen.h>
// first (pc_pch) in every test that links LibTorch; this fails the build of a test that includes
// this header after a LibTorch header came in after Catch2 anyway.
#ifdef INTERNAL_CATCH_TEST
#define PC_TEST_STRINGIFY2(...) #__VA_ARGS__
#define PC_TEST_STRINGIFY(x) PC_TEST_STRINGIFY2(x)
namespace pc::test {
constexpr bool ExpansionNames(const char* text, const char* word) {
  for (; *text; ++text) {
    const char* a = text;
    const char* b = word;
    while (*a && *b && *a == *b) ++a, ++b;
    if (!*b) return true;
  }
  return false;
}
}  // namespace pc::test
static_assert(::pc::test::ExpansionNames(PC_TEST_STRINGIFY(CHECK(true)), "Catch::"),
              "CHECK is not Catch2's (glog's, from a LibTorch header included after <catch2/catch.hpp>): "
              "link the test's LibTorch library through pc_add_test's DEPS so that it reuses pc_pch");
#endif
