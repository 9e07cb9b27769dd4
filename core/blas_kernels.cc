#include "core/blas.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace pc {
namespace {

constexpr const char* kCoreTypeEnv = "OPENBLAS_CORETYPE";
constexpr const char* kGenericEnv = "PERPCOMP_OPENBLAS_GENERIC_CORE";  // set for the re-executed process

// OpenBLAS's core name, or nullptr when the BLAS in the process is not OpenBLAS.
const char* OpenBlasCore() {
  using CoreName = char* (*)();
  auto fn = reinterpret_cast<CoreName>(::dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  return fn == nullptr ? nullptr : fn();
}

// The pre-AVX kernels OpenBLAS's DYNAMIC_ARCH build falls back to for a CPU model it does not
// know (Debian 12's 0.3.21 takes family 6 model 207, Emerald Rapids, for "Prescott": SSE3).
bool IsGenericCore(const char* core) {
  for (const char* name : {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Atom", "Unknown"}) {
    if (std::strcmp(core, name) == 0) return true;
  }
  return false;
}

// The fastest OpenBLAS kernels this CPU (and the kernel's XSAVE state, which libgcc checks) runs.
const char* BestKnownCore() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
    return "SkylakeX";
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  return nullptr;
}

}  // namespace

void SelectBlasKernels(char** argv) {
  if (std::getenv(kCoreTypeEnv) != nullptr) return;  // the user's choice, or this process re-executed
  const char* core = OpenBlasCore();
  if (core == nullptr || !IsGenericCore(core)) return;
  const char* best = BestKnownCore();
  if (best == nullptr) return;
  ::setenv(kGenericEnv, core, 1);
  ::setenv(kCoreTypeEnv, best, 1);
  ::execv("/proc/self/exe", argv);
  // exec failed (no /proc): go on with the generic kernels — slower, the same results.
  ::unsetenv(kCoreTypeEnv);
  ::unsetenv(kGenericEnv);
}

SsyrkFn BlasSsyrk() {
  static const SsyrkFn fn = reinterpret_cast<SsyrkFn>(::dlsym(RTLD_DEFAULT, "ssyrk_"));
  return fn;
}

std::string BlasKernels() {
  const char* core = OpenBlasCore();
  if (core == nullptr) return "not OpenBLAS";
  std::string s = std::string("OpenBLAS ") + core;
  if (const char* generic = std::getenv(kGenericEnv)) {
    s += std::string(" (set by perpcomp: OpenBLAS took this CPU for ") + generic + ")";
  } else if (std::getenv(kCoreTypeEnv) != nullptr) {
    s += " (OPENBLAS_CORETYPE)";
  }
  return s;
}

}  // namespace pc
