#include "core/threads.h"

#include <ATen/Parallel.h>
#include <omp.h>

#include <thread>

namespace pc {

int DefaultThreads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

void SetThreads(int n) {
  if (n <= 0) n = DefaultThreads();
  at::set_num_threads(n);
  omp_set_num_threads(n);
}

int GetThreads() { return at::get_num_threads(); }

}  // namespace pc
