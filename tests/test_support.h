// tests/test_support.h — finding ../shared, temporary folders, running the perpcomp binary.
#pragma once

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
// /usr/bin/python3 with torch available (false: skip the parity test).
bool HavePythonTorch();

}  // namespace pc::test

// Skips the rest of a test case, with a message, when the shared data is absent.
#define PC_SKIP_IF(cond, message) \
  do {                            \
    if (cond) {                   \
      WARN("skipped: " << message); \
      return;                     \
    }                             \
  } while (0)
#define PC_REQUIRE_SHARED() PC_SKIP_IF(::pc::test::SharedData().empty(), "../shared/data is absent (set PERPCOMP_SHARED)")
