// core/blas.h — preparing the BLAS before any work (LibTorch's CPU products go through OpenBLAS).
#pragma once

#include <string>

namespace pc {

// Debian 12's OpenBLAS (0.3.21, DYNAMIC_ARCH) picks its kernels by CPU model when it loads, and
// takes a model it does not know (Intel family 6 model 207, Emerald Rapids) for an SSE3
// "Prescott": every f32 product then runs 2.5× slower (docs/PERFORMANCE.md, "OpenBLAS's
// kernels"). When OPENBLAS_CORETYPE is unset and OpenBLAS chose such a generic core on a CPU
// with AVX2 + FMA or AVX-512, this sets OPENBLAS_CORETYPE to Haswell or SkylakeX and re-executes
// the program (argv as main received it), since OpenBLAS reads it only when it loads. Does
// nothing otherwise, and goes on as before when the exec fails. Call first thing in main.
void SelectBlasKernels(char** argv);
// "OpenBLAS SkylakeX (set by perpcomp: OpenBLAS took this CPU for Prescott)", "OpenBLAS Zen",
// or "not OpenBLAS": the kernels every table's CPU line should carry.
std::string BlasKernels();

// The BLAS's single-precision symmetric rank-k update (Fortran ssyrk_: C := alpha·A·Aᵀ + beta·C,
// column-major, on the triangle `uplo` names) when the process has one (LibTorch links the BLAS;
// found by dlsym, so a build without it falls back), else nullptr.
using SsyrkFn = void (*)(const char* uplo, const char* trans, const int* n, const int* k, const float* alpha,
                         const float* a, const int* lda, const float* beta, float* c, const int* ldc);
SsyrkFn BlasSsyrk();

// Prepares the BLAS for `threads` threads: Debian's OpenBLAS takes a 128 MiB working buffer per
// thread on first use and, when that allocation fails (under ulimit -v), retries forever at 100%
// CPU. So when the address space is limited (RLIMIT_AS), room for those buffers is checked first
// ("out of memory at startup: ..."), and small products on every thread then make OpenBLAS
// allocate them now; it keeps them in its pool for the rest of the process (docs/RELIABILITY.md,
// "Address-space limits"). The buffers OpenBLAS takes when it loads, before main, are checked
// earlier, from the executable's preinit array (core/threads.cc).
void PrepareBlas(int threads);

}  // namespace pc
