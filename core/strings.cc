#include "core/strings.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/error.h"

namespace pc {

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    out.push_back(s.substr(start, pos == std::string::npos ? std::string::npos : pos - start));
    if (pos == std::string::npos) break;
    start = pos + 1;
  }
  return out;
}

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

bool StartsWith(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0 && s.size() >= p.size(); }
bool EndsWith(const std::string& s, const std::string& x) {
  return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
}

std::string Join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

std::string ReplaceAll(std::string s, const std::string& from, const std::string& to) {
  if (from.empty()) return s;
  size_t pos = 0;
  while ((pos = s.find(from, pos)) != std::string::npos) {
    s.replace(pos, from.size(), to);
    pos += to.size();
  }
  return s;
}

int64_t ParseInt(const std::string& text, const std::string& what) {
  std::string t = Trim(text);
  PC_CHECK(!t.empty(), what, ": expected an integer, got an empty value");
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(t.c_str(), &end, 10);
  PC_CHECK(errno == 0 && end != nullptr && *end == '\0', what, ": expected an integer, got '", text, "'");
  return v;
}

double ParseDouble(const std::string& text, const std::string& what) {
  std::string t = Trim(text);
  PC_CHECK(!t.empty(), what, ": expected a number, got an empty value");
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(t.c_str(), &end);
  PC_CHECK(errno == 0 && end != nullptr && *end == '\0' && std::isfinite(v), what, ": expected a number, got '",
           text, "'");
  return v;
}

std::vector<double> ParseDoubleList(const std::string& text, const std::string& what) {
  std::string t = ReplaceAll(text, " ", ",");
  std::vector<double> out;
  for (const auto& part : Split(t, ',')) {
    if (Trim(part).empty()) continue;
    out.push_back(ParseDouble(part, what));
  }
  PC_CHECK(!out.empty(), what, ": expected a comma-separated list of numbers, got '", text, "'");
  return out;
}

std::pair<int, int> ParseRange(const std::string& text, const std::string& what) {
  std::string t = Trim(text);
  size_t dash = t.find('-', 1);
  int a, b;
  if (dash == std::string::npos) {
    a = b = static_cast<int>(ParseInt(t, what));
  } else {
    a = static_cast<int>(ParseInt(t.substr(0, dash), what));
    b = static_cast<int>(ParseInt(t.substr(dash + 1), what));
  }
  PC_CHECK(a >= 0 && b >= a, what, ": expected A-B with 0 <= A <= B, got '", text, "'");
  return {a, b};
}

bool ParseSelfSpec(const std::string& text, const std::string& what, int64_t* n) {
  if (!StartsWith(text, "self:")) return false;
  const std::string count = text.substr(5);
  const bool digits = !count.empty() && count.size() <= 7 &&
                      std::all_of(count.begin(), count.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
  PC_CHECK(digits && std::stoll(count) > 0, what, " '", text,
           "' must be self:N with N a positive number of windows (at most 9999999)");
  *n = std::stoll(count);
  return true;
}

std::pair<int, int> ParseShard(const std::string& text, const std::string& what) {
  auto parts = Split(Trim(text), '/');
  PC_CHECK(parts.size() == 2, what, ": expected K/N, got '", text, "'");
  int k = static_cast<int>(ParseInt(parts[0], what)), n = static_cast<int>(ParseInt(parts[1], what));
  PC_CHECK(n >= 1 && k >= 0 && k < n, what, ": expected K/N with 0 <= K < N, got '", text, "'");
  return {k, n};
}

std::string HumanBytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (std::fabs(bytes) >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

int64_t ParseBytes(const std::string& text, const std::string& what) {
  // A number (decimals allowed) and an optional unit: K, M, G, T with an optional "i" and/or "B"
  // (KiB, MB, g, ...), all powers of 1024; no unit or "B": bytes. Spaces between are allowed.
  const std::string t = Trim(text);
  const char* expected = ": expected a size such as 4G, 512M, 1.5GiB or 1000000 (bytes)";
  PC_CHECK(!t.empty(), what, expected, ", got an empty value");
  size_t unit_at = t.size();
  while (unit_at > 0 && std::isalpha(static_cast<unsigned char>(t[unit_at - 1]))) --unit_at;
  std::string unit;
  for (char c : t.substr(unit_at)) unit.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  const std::string number = Trim(t.substr(0, unit_at));
  double mult = 0;
  static const struct { const char* prefix; double mult; } kUnits[] = {
      {"", 1.0}, {"K", 1024.0}, {"M", 1024.0 * 1024}, {"G", 1024.0 * 1024 * 1024}, {"T", 1024.0 * 1024 * 1024 * 1024}};
  for (const auto& u : kUnits) {
    const std::string p = u.prefix;
    if (unit == p || unit == p + "B" || (!p.empty() && (unit == p + "I" || unit == p + "IB"))) mult = u.mult;
  }
  PC_CHECK(mult > 0, what, ": unknown unit '", t.substr(unit_at), "' in '", text, "'", expected);
  PC_CHECK(!number.empty(), what, ": no number in '", text, "'", expected);
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(number.c_str(), &end);
  PC_CHECK(errno == 0 && end != nullptr && *end == '\0' && std::isfinite(v), what, ": '", text, "' is not a size",
           expected);
  PC_CHECK(v > 0, what, ": expected a positive size, got '", text, "'");
  const double bytes = v * mult;
  PC_CHECK(bytes < 9.0e18, what, ": '", text, "' is too large");
  PC_CHECK(bytes >= 1, what, ": '", text, "' is less than one byte");
  return static_cast<int64_t>(bytes);
}

std::string FormatDouble(double v, int precision) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", precision, v);
  return buf;
}

}  // namespace pc
