// core/blas.h — preparing the BLAS before any work (LibTorch's CPU products go through OpenBLAS).
#pragma once

namespace pc {

// Prepares the BLAS for `threads` threads: Debian's OpenBLAS takes a 128 MiB working buffer per
// thread on first use and, when that allocation fails (under ulimit -v), retries forever at 100%
// CPU. So when the address space is limited (RLIMIT_AS), room for those buffers is checked first
// ("out of memory at startup: ..."), and small products on every thread then make OpenBLAS
// allocate them now; it keeps them in its pool for the rest of the process (docs/RELIABILITY.md,
// "Address-space limits"). The buffers OpenBLAS takes when it loads, before main, are checked
// earlier, from the executable's preinit array (core/threads.cc).
void PrepareBlas(int threads);

}  // namespace pc
