// reports/format.h — how numbers, coefficients and intervals appear in report cells.
#pragma once

#include <optional>
#include <string>

#include "reports/bootstrap.h"
#include "reports/stats.h"

namespace pc::reports {

// Fixed decimals ("0.812"); -0.000 is written 0.000; NaN/inf as "nan", "inf", "-inf".
std::string FormatFixed(double v, int decimals = 3);
// Significant digits ("1.23e-05", "0.0457", "1234"), for values of any scale (errors, losses).
std::string FormatSignificant(double v, int digits = 4);
// The value with fixed decimals, or the reason ("insufficient", "n/a").
std::string FormatStat(const Stat& s, int decimals = 3);
// "[0.612, 0.934]", or "" when either end is missing.
std::string FormatInterval(const std::optional<double>& lo, const std::optional<double>& hi, int decimals = 3);
// "0.812 [0.612, 0.934]", or the estimate alone when there is no interval, or the reason.
std::string FormatWithInterval(const BootstrapInterval& b, int decimals = 3);
std::string FormatWithInterval(const BootstrapDifference& d, int decimals = 3);

}  // namespace pc::reports
