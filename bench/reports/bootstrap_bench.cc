// bench/reports/bootstrap_bench.cc — the cost of the bootstrap intervals of `perpcomp rank`
// (reports/bootstrap.h BootstrapCorrelations: 4 coefficients) at sweep sizes n = 30, 100, 300 with the
// default B = 2000 resamples. It replaces the timed assertion tests/reports/bootstrap_test.cc had.
//
//   build/bench/reports/bootstrap_bench [--reps 3]
// Each time is the median of --reps runs after a warm-up (one thread; rank runs one grid cell per thread).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "bench/cpu_model.h"
#include "core/blas.h"
#include "reports/bootstrap.h"

int main(int argc, char** argv) {
  pc::SelectBlasKernels(argv);  // the kernels perpcomp itself runs (core/blas.h)
  int reps = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--reps") == 0) reps = std::max(1, std::atoi(argv[i + 1]));
  }
  pc::bench::PrintCpu();
  std::printf("| runs n | resamples B | coefficients | seconds (median of %d) |\n|---:|---:|---:|---:|\n", reps);
  for (int n : {30, 100, 300}) {
    std::mt19937_64 rng(2);
    std::uniform_real_distribution<double> u(0, 1);
    std::vector<double> x, y;
    for (int i = 0; i < n; ++i) {
      const double damage = 0.05 + u(rng);
      y.push_back(damage + 0.05 * u(rng));
      x.push_back(damage * (1 + 0.1 * u(rng)));
    }
    pc::reports::BootstrapOptions options;
    std::vector<double> times;
    size_t coefficients = 0;
    for (int r = 0; r <= reps; ++r) {
      const auto start = std::chrono::steady_clock::now();
      coefficients = pc::reports::BootstrapCorrelations(x, y, options).size();
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (r > 0) times.push_back(s);  // r = 0: warm-up
    }
    std::sort(times.begin(), times.end());
    std::printf("| %d | %d | %zu | %.3f |\n", n, options.resamples, coefficients, times[times.size() / 2]);
  }
  return 0;
}
