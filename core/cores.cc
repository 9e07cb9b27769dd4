#include "core/cores.h"

#include <sched.h>

#include <thread>

#include "core/error.h"
#include "core/log.h"

namespace pc {

int AvailableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

int CheckedThreads(int requested, const std::string& what) {
  PC_CHECK(requested >= 0, what, ": expected 0 (all cores) or a positive number of threads, got ", requested);
  const int cores = AvailableCores();
  if (requested == 0) return cores;
  if (requested > cores) {
    log::Warn("threads", what, " ", requested, " exceeds the ", cores, " cores available to this process; using ",
              cores);
    return cores;
  }
  return requested;
}

}  // namespace pc
