// core/strings.h — small string helpers and option-value parsers with context.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace pc {

std::vector<std::string> Split(const std::string& s, char sep);
std::string Trim(const std::string& s);
bool StartsWith(const std::string& s, const std::string& prefix);
bool EndsWith(const std::string& s, const std::string& suffix);
std::string Join(const std::vector<std::string>& parts, const std::string& sep);
std::string ReplaceAll(std::string s, const std::string& from, const std::string& to);

// Parsers: throw pc::Error naming `what` (an option or file:line) and the bad text.
int64_t ParseInt(const std::string& text, const std::string& what);
double ParseDouble(const std::string& text, const std::string& what);
// "0,0.5,1" or "0 0.5 1"
std::vector<double> ParseDoubleList(const std::string& text, const std::string& what);
// "A-B" (inclusive) or "A"; 0-based.
std::pair<int, int> ParseRange(const std::string& text, const std::string& what);
// "self:N", a calibration sampled from the model itself (N windows, 1 <= N <= 9999999): false when
// `text` does not start with "self:"; otherwise sets *n, or throws "<what> '<text>' must be self:N
// with N a positive number of windows (at most 9999999)". One rule for --calib and recipes' text:.
bool ParseSelfSpec(const std::string& text, const std::string& what, int64_t* n);
// "K/N" with 0 <= K < N.
std::pair<int, int> ParseShard(const std::string& text, const std::string& what);
// 1.5 GiB style.
std::string HumanBytes(double bytes);
// Parses "8G", "512M", "1.5GiB", "4 GB", "1000000" into bytes (K/M/G/T, optional i and B, powers
// of 1024). Errors name `what` and the text.
int64_t ParseBytes(const std::string& text, const std::string& what);
// Shortest round-trip decimal for a double ("%.17g" trimmed).
std::string FormatDouble(double v, int precision = 6);

}  // namespace pc
