// reports/parallel.h — a minimal parallel loop for the report statistics (pure functions of their inputs;
// no store access, which must stay on the main thread). pc_reports has no LibTorch, so no core/threads.h.
#pragma once

#include <cstddef>
#include <functional>

namespace pc::reports {

// Calls fn(i) for i = 0 .. n−1 on up to `threads` threads, never more than the cores available
// (core/cores.h; threads <= 1: in order on this thread). Each i is handled exactly once; the order across threads is unspecified. `fn` must not throw.
void ParallelFor(size_t n, int threads, const std::function<void(size_t)>& fn);

}  // namespace pc::reports
