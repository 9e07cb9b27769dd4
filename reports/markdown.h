// reports/markdown.h — GitHub-flavoured Markdown: tables (cells escaped by EscapeMarkdownCell, columns
// padded so the plain text lines up) and a small document builder.
#pragma once

#include <string>
#include <vector>

#include "reports/table.h"

namespace pc::reports {

// A pipe table: header, a delimiter row (":---" left, "---:" right), one line per row.
std::string ToMarkdown(const TextTable& table);

// A fenced code block whose fence is longer than any backtick run inside `text`.
std::string MarkdownCodeBlock(const std::string& text, const std::string& language = "");

class MarkdownDocument {
 public:
  explicit MarkdownDocument(const std::string& title);  // "# title"

  // "## text" (level 2) .. "###### text"; the text is escaped.
  void Heading(const std::string& text, int level = 2);
  // Markdown written by the caller (emphasis and code spans pass through); embed names and other
  // untrusted text with EscapeMarkdownCell.
  void Paragraph(const std::string& markdown);
  // A bullet list of plain-text items (escaped).
  void List(const std::vector<std::string>& items);
  void Table(const TextTable& table);
  void Code(const std::string& text, const std::string& language = "");
  // ![alt](path) — e.g. an SVG written beside the Markdown file.
  void Image(const std::string& alt, const std::string& path);

  std::string Render() const { return text_; }

 private:
  void Block(const std::string& block);
  std::string text_;
};

}  // namespace pc::reports
