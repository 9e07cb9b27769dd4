#include "core/threads.h"

#include <ATen/Parallel.h>
#include <omp.h>

#include <algorithm>

#include "core/cores.h"

namespace pc {

int DefaultThreads() { return AvailableCores(); }

void SetThreads(int n) {
  n = n <= 0 ? DefaultThreads() : std::min(n, AvailableCores());  // the CLI has warned (CheckedThreads)
  at::set_num_threads(n);
  omp_set_num_threads(n);
}

int GetThreads() { return at::get_num_threads(); }

}  // namespace pc
