// bench/cpu_model.h — the CPU a bench ran on, for the first line of its table: the model name and
// the flags that decide the arithmetic's speed (core/cpu_features.h), and the cores available.
#pragma once

#include <cstdio>
#include <string>

#include "core/cores.h"
#include "core/cpu_features.h"

namespace pc::bench {

inline std::string CpuModel() { return HostCpu().model; }

inline void PrintCpu() {
  std::printf("CPU: %s; %d cores available\n\n", HostCpu().Summary().c_str(), AvailableCores());
}

}  // namespace pc::bench
