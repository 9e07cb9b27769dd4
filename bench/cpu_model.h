// bench/cpu_model.h — the CPU a bench ran on, for the first line of its table: the model name and
// the flags that decide the arithmetic's speed (core/cpu_features.h), the cores available, and the
// BLAS kernels in use (core/blas.h; a bench's main calls SelectBlasKernels first, as perpcomp's does).
#pragma once

#include <cstdio>
#include <string>

#include "core/blas.h"
#include "core/cores.h"
#include "core/cpu_features.h"

namespace pc::bench {

inline std::string CpuModel() { return HostCpu().model; }

inline void PrintCpu() {
  std::printf("CPU: %s; %d cores available; BLAS kernels: %s\n\n", HostCpu().Summary().c_str(), AvailableCores(),
              BlasKernels().c_str());
}

}  // namespace pc::bench
