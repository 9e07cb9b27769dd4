// reports/bootstrap_grid.h — BootstrapCorrelations (bootstrap.h) for every pair of many x variables (the
// predictors) and many y variables (the outcomes) at once.
//
// The result for (x_i, y_j) is exactly BootstrapCorrelations(xs[i], ys[j], options, {x_names[i], y_names[j]}):
// the same resamples (Resampler(n, seed)), the same checks, the same arithmetic, so the same numbers bit for
// bit (tests/reports/bootstrap_grid_test.cc compares with ==). It is faster because everything that depends on
// one variable alone — the resampled values, their scaled deviations, ranks, logs, sort order and ties — is
// computed once per resample and variable instead of once per pair, and Kendall's τ-b counts reuse the sort
// order of x. The result does not depend on `threads` (each worker replays the same resamples for its share
// of the x variables).
#pragma once

#include <string>
#include <vector>

#include "reports/bootstrap.h"

namespace pc::reports {

// [x][y][coefficient in kAllCoefficients order]. All variables must have the same length (else pc::Error
// naming the variable); names label the detail texts.
std::vector<std::vector<std::vector<BootstrapInterval>>> BootstrapCorrelationGrid(
    const std::vector<std::vector<double>>& xs, const std::vector<std::string>& x_names,
    const std::vector<std::vector<double>>& ys, const std::vector<std::string>& y_names,
    const BootstrapOptions& options, int threads = 1);

}  // namespace pc::reports
