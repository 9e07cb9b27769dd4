// bench/cpu_model.h — the CPU a bench ran on, for the first line of its table ("model name" of
// /proc/cpuinfo and the cores available to the process). Header-only: no library needed.
#pragma once

#include <cstdio>
#include <fstream>
#include <string>

#include "core/cores.h"

namespace pc::bench {

inline std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  }
  return "unknown CPU";
}

inline void PrintCpu() { std::printf("CPU: %s, %d cores available\n\n", CpuModel().c_str(), AvailableCores()); }

}  // namespace pc::bench
