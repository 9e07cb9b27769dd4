// core/cpu_features.h — what this CPU can do, read once from /proc/cpuinfo (LibTorch-free): the
// model name and the instruction-set flags that decide how fast perpcomp's arithmetic runs. The
// Linux kernel lists a flag only when the CPU has it and the kernel enabled it (XSAVE state for
// AVX-512 and AMX), so a listed flag is usable.
#pragma once

#include <string>

namespace pc {

struct CpuFeatures {
  std::string model = "unknown CPU";  // "model name" of /proc/cpuinfo
  bool avx2 = false;
  bool avx512f = false;
  bool avx512_vnni = false;
  bool avx512_bf16 = false;  // VDPBF16PS: bf16 dot products in hardware
  bool amx_bf16 = false;     // AMX tiles with bf16
  bool read = false;         // /proc/cpuinfo was readable (otherwise every flag is false)

  // bf16 GEMMs run on bf16 instructions (AVX512-BF16 or AMX-BF16). Without them LibTorch 1.13
  // emulates bf16 arithmetic, about 40× slower than f32 on an AVX2-only EPYC (docs/PERFORMANCE.md).
  bool NativeBf16() const { return avx512_bf16 || amx_bf16; }
  // bf16 GEMMs are faster than f32 ones: with AMX-BF16 (oneDNN's AMX kernels, the SmolLM2 forward
  // 2.7× the f32 one). With AVX512-BF16 alone LibTorch 1.13's bf16 forward was 1.5× slower than
  // its f32 one on OpenBLAS's AVX-512 kernels (docs/PERFORMANCE.md "bf16 on CPUs without bf16
  // arithmetic").
  bool FastBf16() const { return amx_bf16; }
  // "AMD EPYC 9B14; AVX2 yes, AVX-512 no, AVX512-VNNI no, AVX512-BF16 no, AMX-BF16 no" — the line
  // every benchmark table carries.
  std::string Summary() const;
};

// Parses /proc/cpuinfo text (the first processor's "model name" and "flags" lines).
CpuFeatures ParseCpuInfo(const std::string& cpuinfo);
// This machine's features, read once.
const CpuFeatures& HostCpu();

}  // namespace pc
