// metrics/simd.h — PC_SIMD_CLONES: compile a hot loop for AVX-512, AVX2 and the baseline ISA,
// the variant chosen at load time (GCC target_clones, an ifunc). The project builds for plain
// x86-64 (SSE2); LibTorch's kernels dispatch on the CPU themselves, our fused float64 loops
// (directional split, KL) do so through this. Results are the same on every variant: the loops
// keep fixed per-lane accumulators and the build does not contract a*b+c into FMA (ISO C++).
#pragma once

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
#define PC_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define PC_SIMD_CLONES
#endif
#define PC_ALWAYS_INLINE inline __attribute__((always_inline))
