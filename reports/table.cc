#include "reports/table.h"

#include <cstdlib>

#include "core/error.h"
#include "core/strings.h"
#include "reports/stats.h"

namespace pc::reports {
namespace {

// True when `text` (trimmed) is exactly one number as strtod reads it.
bool IsNumber(const std::string& text) {
  const std::string t = Trim(text);
  if (t.empty()) return false;
  char* end = nullptr;
  std::strtod(t.c_str(), &end);
  return end == t.c_str() + t.size();
}

// "[a, b]" with numbers a and b.
bool IsInterval(const std::string& text) {
  const std::string t = Trim(text);
  if (t.size() < 2 || t.front() != '[' || t.back() != ']') return false;
  const std::vector<std::string> parts = Split(t.substr(1, t.size() - 2), ',');
  return parts.size() == 2 && IsNumber(parts[0]) && IsNumber(parts[1]);
}

}  // namespace

TextTable::TextTable(std::vector<std::string> header)
    : header_(std::move(header)), align_(header_.size(), Align::kLeft) {
  PC_CHECK(!header_.empty(), "table: the header has no columns");
}

void TextTable::AddRow(std::vector<std::string> row) {
  PC_CHECK(row.size() == header_.size(), "table: row ", rows_.size() + 1, " has ", row.size(), " cells but the header has ",
           header_.size(), " columns");
  rows_.push_back(std::move(row));
}

void TextTable::SetAlign(size_t column, Align align) {
  PC_CHECK(column < header_.size(), "table: column ", column, " does not exist (", header_.size(), " columns)");
  align_[column] = align;
}

void TextTable::AlignNumericColumns() {
  for (size_t c = 0; c < header_.size(); ++c) {
    bool numeric = true, any_number = false;
    for (const auto& row : rows_) {
      if (IsNumericCell(row[c])) {
        any_number = true;
      } else if (!IsPlaceholderCell(row[c])) {
        numeric = false;
        break;
      }
    }
    if (numeric && any_number) align_[c] = Align::kRight;
  }
}

bool IsNumericCell(const std::string& cell) {
  const std::string t = Trim(cell);
  if (IsNumber(t) || IsInterval(t)) return true;
  const size_t bracket = t.find(" [");
  return bracket != std::string::npos && IsNumber(t.substr(0, bracket)) && IsInterval(t.substr(bracket + 1));
}

bool IsPlaceholderCell(const std::string& cell) {
  const std::string t = Trim(cell);
  return t.empty() || t == "-" || StartsWith(t, kNotApplicable) || StartsWith(t, kInsufficient);
}

}  // namespace pc::reports
