// reports/table.h — a table of strings, written by html.h (ToHtml), markdown.h (ToMarkdown) and
// csv.h (ToCsv). Cells are plain text; each writer escapes them for its format.
#pragma once

#include <string>
#include <vector>

namespace pc::reports {

enum class Align { kLeft, kRight };

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header);

  // Appends a row; its length must equal the header's (else pc::Error naming the row and both lengths).
  void AddRow(std::vector<std::string> row);
  void SetAlign(size_t column, Align align);
  // Right-aligns every column whose cells are all numbers or placeholders (see IsNumericCell), with
  // at least one number.
  void AlignNumericColumns();

  const std::vector<std::string>& header() const { return header_; }
  const std::vector<std::vector<std::string>>& rows() const { return rows_; }
  Align align(size_t column) const { return align_.at(column); }
  size_t columns() const { return header_.size(); }

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<Align> align_;
};

// True for a number ("0.81", "-3", "1e-05", "inf"), optionally followed by an interval in brackets
// ("0.81 [0.62, 0.93]"), or an interval alone.
bool IsNumericCell(const std::string& cell);
// True for "", "-", "n/a", "insufficient" and texts that begin with "n/a" or "insufficient".
bool IsPlaceholderCell(const std::string& cell);

}  // namespace pc::reports
