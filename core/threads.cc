#include "core/threads.h"
#include "core/blas.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <omp.h>

#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "core/cores.h"
#include "core/error.h"
#include "core/strings.h"

namespace pc {
namespace {

constexpr size_t kBlasBuffer = (size_t(128) << 20) + (size_t(1) << 20);  // OpenBLAS BUFFER_SIZE and its alignment

// Appends the decimal digits of `v` to `out` (no allocation, no locale: safe before libc's users start).
char* AppendNumber(char* out, unsigned long long v) {
  char digits[24];
  int n = 0;
  do digits[n++] = static_cast<char>('0' + v % 10); while ((v /= 10) != 0);
  while (n > 0) *out++ = digits[--n];
  return out;
}

char* AppendText(char* out, const char* text) {
  const size_t n = std::strlen(text);
  std::memcpy(out, text, n);
  return out + n;
}

// True when the address-space limit (RLIMIT_AS) has no value or leaves room to map `need` bytes:
// they are mapped (without reserving memory) and released at once. Only system calls, so it is
// safe from the preinit array. `*limit` gets the limit in bytes (0 when there is none).
bool AddressSpaceFits(size_t need, size_t* limit) {
  rlimit as{};
  *limit = 0;
  if (::getrlimit(RLIMIT_AS, &as) != 0 || as.rlim_cur == RLIM_INFINITY) return true;
  *limit = static_cast<size_t>(as.rlim_cur);
  void* p = ::mmap(nullptr, need, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return false;
  ::munmap(p, need);
  return true;
}

// Runs from the executable's DT_PREINIT_ARRAY: after the dynamic linker has mapped every shared
// library, before any of their constructors. OpenBLAS's constructor (gotoblas_init ->
// blas_thread_init) takes one 128 MiB buffer per core and, when the address-space limit
// (RLIMIT_AS) has no room for them, retries the malloc forever at 100% CPU, before main could
// say anything. So under such a limit, room for those buffers is mapped and released here first,
// and a limit without it ends the process with an error (docs/RELIABILITY.md, "Address-space
// limits"). Only system calls and no allocation: nothing in libc's users has started yet.
void CheckAddressSpaceBeforeLibraries(int, char**, char**) {
  // Cores as OpenBLAS counts them when it loads (the affinity mask, not a cgroup's CPU quota as
  // AvailableCores() does): its constructor sizes its buffers by this count, whatever --threads says.
  cpu_set_t set;
  CPU_ZERO(&set);
  const int cores = ::sched_getaffinity(0, sizeof set, &set) == 0 ? std::max(1, CPU_COUNT(&set)) : 1;
  // The buffers, plus what the start of main takes before PrepareBlas's own check (LibTorch's thread
  // pools: their stacks and malloc arenas; without it, pthreadpool_create waits forever on a thread
  // that could not be created).
  const size_t need = kBlasBuffer * static_cast<size_t>(cores) + (size_t(128) << 20);
  size_t limit = 0;
  if (AddressSpaceFits(need, &limit)) return;
  char msg[512];
  char* e = msg;
  e = AppendText(e, "error: out of memory at startup: the address-space limit (ulimit -v) of ");
  e = AppendNumber(e, static_cast<unsigned long long>(limit >> 20));
  e = AppendText(e, " MiB leaves less than ");
  e = AppendNumber(e, static_cast<unsigned long long>(need >> 20));
  e = AppendText(e, " MiB beyond the shared libraries for the linear-algebra library's start (OpenBLAS takes "
                    "128 MiB per core when it loads; ");
  e = AppendNumber(e, static_cast<unsigned long long>(cores));
  e = AppendText(e, " cores); raise ulimit -v, or limit memory with a cgroup instead (it does not limit address space)\n");
  (void)!::write(STDERR_FILENO, msg, static_cast<size_t>(e - msg));
  ::_exit(1);
}

}  // namespace

// Placed in the executable that links this file (perpcomp; the preinit array is ignored in shared libraries).
__attribute__((section(".preinit_array"), used)) void (*kCheckAddressSpace)(int, char**, char**) =
    &CheckAddressSpaceBeforeLibraries;

int DefaultThreads() { return AvailableCores(); }

void SetThreads(int n) {
  n = n <= 0 ? DefaultThreads() : std::min(n, AvailableCores());  // the CLI has warned (CheckedThreads)
  at::set_num_threads(n);
  omp_set_num_threads(n);
}

int GetThreads() { return at::get_num_threads(); }

void PrepareBlas(int threads) {
  const size_t need = kBlasBuffer * static_cast<size_t>(threads + 1) + (size_t(64) << 20);
  size_t limit = 0;
  PC_CHECK(AddressSpaceFits(need, &limit), "out of memory at startup: the address-space limit (ulimit -v) of ",
           HumanBytes(static_cast<double>(limit)), " leaves less than ", HumanBytes(static_cast<double>(need)),
           " for the linear-algebra library's working buffers (OpenBLAS takes 128 MiB per thread; ", threads,
           " threads); raise ulimit -v or lower --threads");
  at::NoGradGuard no_grad;
  const at::Tensor a = at::ones({128, 128});
  (void)at::mm(a, a);  // OpenBLAS's own threads
  at::parallel_for(0, threads, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) (void)at::mm(a, a);  // one product on each intra-op thread
  });
}

}  // namespace pc
