#include "reports/parallel.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "core/cores.h"

namespace pc::reports {

void ParallelFor(size_t n, int threads, const std::function<void(size_t)>& fn) {
  // Never more workers than items or than the cores of this process (core/cores.h), whatever the caller asks.
  const size_t asked = threads < 1 ? 1 : size_t(threads);
  const size_t workers = std::min({n, asked, size_t(AvailableCores())});
  if (workers <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < n; i = next++) fn(i);
  };
  std::vector<std::thread> pool;
  for (size_t w = 1; w < workers; ++w) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
}

}  // namespace pc::reports
