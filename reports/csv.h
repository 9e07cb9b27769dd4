// reports/csv.h — CSV by RFC 4180: one header line, one line per row, CRLF line ends, fields quoted
// when needed (EscapeCsvField). Cells are written as given (numbers already formatted). ParseCsv reads
// such a file back (`perpcomp rank --tables`).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "reports/table.h"

namespace pc::reports {

// One record: the escaped fields joined with commas, ending in CRLF.
std::string CsvRecord(const std::vector<std::string>& fields);
std::string ToCsv(const TextTable& table);

// A CSV file read back: the header and the rows, each row as long as the header.
struct CsvRecords {
  std::string path;  // for messages
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<size_t> lines;  // the line each row starts on (the header is line 1; a quoted field may span lines)
  // The index of the header column `name`, or nullopt.
  std::optional<size_t> Column(const std::string& name) const;
  // "F: line 7, column 'delta_nll' (5)": where a cell is, for messages.
  std::string Where(size_t row, size_t column) const;
};

// Parses RFC 4180 text (CRLF or LF line ends; quoted fields may hold commas, doubled quotes and line breaks).
// Errors name `path` and the line: an empty file, an unterminated quote, text after a closing quote, a row
// whose number of fields differs from the header's.
CsvRecords ParseCsv(const std::string& text, const std::string& path);

}  // namespace pc::reports
