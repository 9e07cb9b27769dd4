#include "reports/csv.h"

#include "reports/escape.h"

namespace pc::reports {

std::string CsvRecord(const std::vector<std::string>& fields) {
  std::string out;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) out += ',';
    out += EscapeCsvField(fields[i]);
  }
  out += "\r\n";
  return out;
}

std::string ToCsv(const TextTable& table) {
  std::string out = CsvRecord(table.header());
  for (const auto& row : table.rows()) out += CsvRecord(row);
  return out;
}

}  // namespace pc::reports
