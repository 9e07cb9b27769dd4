#include "reports/format.h"

#include <cmath>
#include <cstdio>

namespace pc::reports {
namespace {

std::string NonFiniteText(double v) {
  if (std::isnan(v)) return "nan";
  return v > 0 ? "inf" : "-inf";
}

std::string WithInterval(const Stat& estimate, const std::optional<double>& lo, const std::optional<double>& hi,
                         int decimals) {
  std::string s = FormatStat(estimate, decimals);
  const std::string interval = FormatInterval(lo, hi, decimals);
  return interval.empty() ? s : s + " " + interval;
}

}  // namespace

std::string FormatFixed(double v, int decimals) {
  if (!std::isfinite(v)) return NonFiniteText(v);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  std::string s = buf;
  if (s[0] == '-' && s.find_first_not_of("-0.") == std::string::npos) s.erase(0, 1);  // "-0.000"
  return s;
}

std::string FormatSignificant(double v, int digits) {
  if (!std::isfinite(v)) return NonFiniteText(v);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v == 0 ? 0.0 : v);
  return buf;
}

std::string FormatStat(const Stat& s, int decimals) { return s.ok() ? FormatFixed(*s.value, decimals) : s.reason; }

std::string FormatInterval(const std::optional<double>& lo, const std::optional<double>& hi, int decimals) {
  if (!lo || !hi) return "";
  return "[" + FormatFixed(*lo, decimals) + ", " + FormatFixed(*hi, decimals) + "]";
}

std::string FormatWithInterval(const BootstrapInterval& b, int decimals) {
  return WithInterval(b.estimate, b.lo, b.hi, decimals);
}

std::string FormatWithInterval(const BootstrapDifference& d, int decimals) {
  return WithInterval(d.estimate, d.lo, d.hi, decimals);
}

}  // namespace pc::reports
