#include "core/threads.h"
#include "core/blas.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <omp.h>

#include <sys/mman.h>
#include <sys/resource.h>

#include <algorithm>

#include "core/cores.h"
#include "core/error.h"
#include "core/strings.h"

namespace pc {

int DefaultThreads() { return AvailableCores(); }

void SetThreads(int n) {
  n = n <= 0 ? DefaultThreads() : std::min(n, AvailableCores());  // the CLI has warned (CheckedThreads)
  at::set_num_threads(n);
  omp_set_num_threads(n);
}

int GetThreads() { return at::get_num_threads(); }

void PrepareBlas(int threads) {
  rlimit as{};
  if (::getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
    constexpr size_t kBuffer = (size_t(128) << 20) + (size_t(1) << 20);  // OpenBLAS BUFFER_SIZE and its alignment
    const size_t need = kBuffer * static_cast<size_t>(threads + 1) + (size_t(64) << 20);
    void* p = ::mmap(nullptr, need, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    PC_CHECK(p != MAP_FAILED, "out of memory at startup: the address-space limit (ulimit -v) of ",
             HumanBytes(static_cast<double>(as.rlim_cur)), " leaves less than ", HumanBytes(static_cast<double>(need)),
             " for the linear-algebra library's working buffers (OpenBLAS takes 128 MiB per thread; ", threads,
             " threads); raise ulimit -v or lower --threads");
    ::munmap(p, need);
  }
  at::NoGradGuard no_grad;
  const at::Tensor a = at::ones({128, 128});
  (void)at::mm(a, a);  // OpenBLAS's own threads
  at::parallel_for(0, threads, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) (void)at::mm(a, a);  // one product on each intra-op thread
  });
}

}  // namespace pc
