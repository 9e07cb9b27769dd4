#include "tests/reports/reports_test_support.h"

#include <catch2/catch.hpp>

#include <fstream>
#include <map>

#include "tests/test_support.h"

namespace pc::test {

bool HavePython(const std::string& modules) {
  static std::map<std::string, bool> cache;
  auto it = cache.find(modules);
  if (it == cache.end()) {
    it = cache.emplace(modules, Run("/usr/bin/python3 -c 'import " + modules + "'").exit_code == 0).first;
  }
  return it->second;
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  REQUIRE(f.good());
}

std::string RunPythonScript(const std::string& script, const std::string& args) {
  const std::string dir = TempDir("python");
  WriteText(dir + "/script.py", script);
  RunResult r = Run("/usr/bin/python3 '" + dir + "/script.py' " + args);
  INFO("python stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  return r.out;
}

}  // namespace pc::test
