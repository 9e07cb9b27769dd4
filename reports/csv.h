// reports/csv.h — CSV by RFC 4180: one header line, one line per row, CRLF line ends, fields quoted
// when needed (EscapeCsvField). Cells are written as given (numbers already formatted).
#pragma once

#include <string>
#include <vector>

#include "reports/table.h"

namespace pc::reports {

// One record: the escaped fields joined with commas, ending in CRLF.
std::string CsvRecord(const std::vector<std::string>& fields);
std::string ToCsv(const TextTable& table);

}  // namespace pc::reports
