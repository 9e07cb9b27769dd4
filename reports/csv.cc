#include "reports/csv.h"

#include "core/error.h"
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

std::optional<size_t> CsvRecords::Column(const std::string& name) const {
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i] == name) return i;
  }
  return std::nullopt;
}

std::string CsvRecords::Where(size_t row, size_t column) const {
  return Str(path, ": line ", lines.at(row), ", column '", header.at(column), "' (", column + 1, ")");
}

CsvRecords ParseCsv(const std::string& text, const std::string& path) {
  CsvRecords out;
  out.path = path;
  PC_CHECK(!text.empty(), path, ": the file is empty (expected a header line)");
  size_t line = 1, i = 0;
  while (i < text.size()) {
    const size_t record_line = line;
    std::vector<std::string> fields(1);
    // One record: fields up to an unquoted line end (CRLF or LF) or the end of the text.
    while (i < text.size()) {
      const char c = text[i];
      if (c == '"' && fields.back().empty()) {
        const size_t open_line = line;
        for (++i;; ++i) {
          PC_CHECK(i < text.size(), path, ": line ", open_line, ": a quoted field is not closed");
          if (text[i] == '\n') ++line;
          if (text[i] != '"') {
            fields.back() += text[i];
          } else if (i + 1 < text.size() && text[i + 1] == '"') {
            fields.back() += '"';
            ++i;
          } else {
            break;
          }
        }
        ++i;  // the closing quote
        PC_CHECK(i == text.size() || text[i] == ',' || text[i] == '\r' || text[i] == '\n', path, ": line ", line,
                 ": text after a closing quote (a quote inside a field must be doubled)");
      } else if (c == ',') {
        fields.emplace_back();
        ++i;
      } else if (c == '\n' || (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n')) {
        i += c == '\r' ? 2 : 1;
        ++line;
        break;
      } else {
        fields.back() += c;
        ++i;
      }
    }
    if (record_line == 1) {
      out.header = std::move(fields);
      continue;
    }
    PC_CHECK(fields.size() == out.header.size(), path, ": line ", record_line, " has ", fields.size(),
             " fields, the header ", out.header.size(), " (a ragged row)");
    out.rows.push_back(std::move(fields));
    out.lines.push_back(record_line);
  }
  return out;
}

}  // namespace pc::reports
