#include "reports/markdown.h"

#include <algorithm>

#include "core/error.h"
#include "core/strings.h"
#include "reports/escape.h"

namespace pc::reports {
namespace {

std::string Pad(const std::string& cell, size_t width, Align align) {
  const size_t w = DisplayWidth(cell);
  const std::string fill(width > w ? width - w : 0, ' ');
  return align == Align::kRight ? fill + cell : cell + fill;
}

std::string Line(const std::vector<std::string>& cells, const std::vector<size_t>& widths, const TextTable& table) {
  std::string out = "|";
  for (size_t c = 0; c < cells.size(); ++c) out += " " + Pad(cells[c], widths[c], table.align(c)) + " |";
  return out + "\n";
}

std::vector<std::string> Escaped(const std::vector<std::string>& cells) {
  std::vector<std::string> out;
  for (const auto& c : cells) out.push_back(EscapeMarkdownCell(c));
  return out;
}

}  // namespace

std::string ToMarkdown(const TextTable& table) {
  std::vector<std::vector<std::string>> lines;
  lines.push_back(Escaped(table.header()));
  for (const auto& row : table.rows()) lines.push_back(Escaped(row));
  std::vector<size_t> widths(table.columns(), 3);
  for (const auto& line : lines) {
    for (size_t c = 0; c < line.size(); ++c) widths[c] = std::max(widths[c], DisplayWidth(line[c]));
  }
  std::string out = Line(lines[0], widths, table);
  out += "|";
  for (size_t c = 0; c < widths.size(); ++c) {
    const bool right = table.align(c) == Align::kRight;
    out += right ? " " + std::string(widths[c] - 1, '-') + ": |" : " :" + std::string(widths[c] - 1, '-') + " |";
  }
  out += "\n";
  for (size_t r = 1; r < lines.size(); ++r) out += Line(lines[r], widths, table);
  return out;
}

std::string MarkdownCodeBlock(const std::string& text, const std::string& language) {
  size_t longest = 0, run = 0;
  for (char c : text) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  const std::string fence(std::max<size_t>(3, longest + 1), '`');
  std::string body = SanitizeUtf8(text);
  if (!body.empty() && body.back() != '\n') body += '\n';
  return fence + language + "\n" + body + fence + "\n";
}

MarkdownDocument::MarkdownDocument(const std::string& title) { Block("# " + EscapeMarkdownCell(title) + "\n"); }

void MarkdownDocument::Heading(const std::string& text, int level) {
  PC_CHECK(level >= 2 && level <= 6, "markdown: heading level must be 2..6 (got ", level, ")");
  Block(std::string(size_t(level), '#') + " " + EscapeMarkdownCell(text) + "\n");
}

void MarkdownDocument::Paragraph(const std::string& markdown) {
  std::string p = SanitizeUtf8(markdown);
  while (!p.empty() && p.back() == '\n') p.pop_back();
  Block(p + "\n");
}

void MarkdownDocument::List(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += "- " + EscapeMarkdownCell(item) + "\n";
  Block(out);
}

void MarkdownDocument::Table(const TextTable& table) { Block(ToMarkdown(table)); }

void MarkdownDocument::Code(const std::string& text, const std::string& language) {
  Block(MarkdownCodeBlock(text, language));
}

void MarkdownDocument::Image(const std::string& alt, const std::string& path) {
  std::string target;
  for (char c : path) {
    if (c == ' ') target += "%20";
    else if (c == '(') target += "%28";
    else if (c == ')') target += "%29";
    else target += c;
  }
  const std::string text = ReplaceAll(ReplaceAll(EscapeMarkdownCell(alt), "[", "\\["), "]", "\\]");
  Block("![" + text + "](" + target + ")\n");
}

void MarkdownDocument::Block(const std::string& block) {
  if (!text_.empty()) text_ += "\n";
  text_ += block;
}

}  // namespace pc::reports
