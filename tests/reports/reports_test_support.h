// tests/reports/reports_test_support.h — deterministic test data and the /usr/bin/python3 bridge of
// the reports tests.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace pc::test {

// Uniform in [0, 1) from the top 53 bits (the same on every platform, unlike std:: distributions).
inline double Uniform(std::mt19937_64& rng) { return double(rng() >> 11) * 0x1.0p-53; }
// Integer in [lo, hi] (slightly biased; fine for test data).
inline int UniformInt(std::mt19937_64& rng, int lo, int hi) { return lo + int(rng() % uint64_t(hi - lo + 1)); }

// True when /usr/bin/python3 can import `modules` ("scipy.stats", "xml.etree.ElementTree").
bool HavePython(const std::string& modules);

// Writes `script` to a temporary file and runs /usr/bin/python3 on it with `args`; returns stdout.
// REQUIREs exit status 0 (stderr is shown on failure).
std::string RunPythonScript(const std::string& script, const std::string& args);

void WriteText(const std::string& path, const std::string& text);

}  // namespace pc::test
