#include "core/cpu_features.h"

#include <fstream>
#include <set>
#include <sstream>

namespace pc {
namespace {

// The value after "key<spaces/tabs>:" on a /proc/cpuinfo line, or false when the line is another key.
bool ValueOf(const std::string& line, const std::string& key, std::string* value) {
  if (line.compare(0, key.size(), key) != 0) return false;
  const size_t colon = line.find(':', key.size());
  if (colon == std::string::npos || line.find_first_not_of(" \t", key.size()) != colon) return false;
  const size_t start = line.find_first_not_of(" \t", colon + 1);
  *value = start == std::string::npos ? std::string() : line.substr(start);
  return true;
}

}  // namespace

CpuFeatures ParseCpuInfo(const std::string& cpuinfo) {
  CpuFeatures f;
  std::istringstream in(cpuinfo);
  std::string line, value;
  bool have_model = false, have_flags = false;
  std::set<std::string> flags;
  while (std::getline(in, line) && !(have_model && have_flags)) {
    if (!have_model && ValueOf(line, "model name", &value)) {
      f.model = value.empty() ? f.model : value;
      have_model = true;
    } else if (!have_flags && ValueOf(line, "flags", &value)) {
      std::istringstream words(value);
      for (std::string w; words >> w;) flags.insert(w);
      have_flags = true;
    }
  }
  f.read = have_flags;
  f.avx2 = flags.count("avx2") > 0;
  f.avx512f = flags.count("avx512f") > 0;
  f.avx512_vnni = flags.count("avx512_vnni") > 0;
  f.avx512_bf16 = flags.count("avx512_bf16") > 0;
  f.amx_bf16 = flags.count("amx_bf16") > 0;
  return f;
}

std::string CpuFeatures::Summary() const {
  auto yn = [](bool b) { return b ? "yes" : "no"; };
  std::ostringstream s;
  s << model;
  if (!read) return s.str() + " (flags unknown: /proc/cpuinfo unreadable)";
  s << "; AVX2 " << yn(avx2) << ", AVX-512 " << yn(avx512f) << ", AVX512-VNNI " << yn(avx512_vnni) << ", AVX512-BF16 "
    << yn(avx512_bf16) << ", AMX-BF16 " << yn(amx_bf16);
  return s.str();
}

const CpuFeatures& HostCpu() {
  static const CpuFeatures features = [] {
    std::ifstream in("/proc/cpuinfo");
    std::stringstream text;
    text << in.rdbuf();
    return ParseCpuInfo(text.str());
  }();
  return features;
}

}  // namespace pc
