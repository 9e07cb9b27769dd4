#include "reports/html.h"

#include "core/error.h"
#include "core/strings.h"
#include "reports/escape.h"

namespace pc::reports {
namespace {

// Escaped text with newlines as <br/>.
std::string EscapeLines(const std::string& text) {
  std::string t = ReplaceAll(text, "\r\n", "\n");
  t = ReplaceAll(t, "\r", "\n");
  return ReplaceAll(EscapeXml(t), "\n", "<br/>");
}

std::string Cell(const char* tag, const std::string& text, Align align, const char* extra = "") {
  std::string open = std::string("<") + tag + extra;
  if (align == Align::kRight) open += " class=\"num\"";
  return open + ">" + EscapeLines(text) + "</" + tag + ">";
}

// Inline CSS: no '<' or '&', so the page stays well-formed XML.
const char kStyle[] = R"(
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif;
       margin: 2em auto; max-width: 1100px; padding: 0 1em; color: #222; line-height: 1.45; }
h1 { font-size: 1.6em; border-bottom: 2px solid #4e79a7; padding-bottom: 0.2em; }
h2 { font-size: 1.3em; margin-top: 1.8em; border-bottom: 1px solid #ddd; padding-bottom: 0.15em; }
h3 { font-size: 1.1em; margin-top: 1.3em; }
nav ul { columns: 2; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.92em; }
caption { text-align: left; font-weight: 600; padding-bottom: 0.3em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; vertical-align: top; }
th { background: #f0f3f7; text-align: left; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tbody tr:nth-child(even) { background: #fafafa; }
figure { margin: 1em 0; }
figure svg { max-width: 100%; height: auto; }
figcaption { font-size: 0.9em; color: #555; margin-top: 0.3em; }
pre { background: #f6f8fa; border: 1px solid #ddd; padding: 0.6em; overflow-x: auto; font-size: 0.88em; }
)";

}  // namespace

std::string ToHtml(const TextTable& table, const std::string& caption) {
  std::string out = "<table>\n";
  if (!caption.empty()) out += "<caption>" + EscapeLines(caption) + "</caption>\n";
  out += "<thead><tr>";
  for (size_t c = 0; c < table.columns(); ++c) out += Cell("th", table.header()[c], table.align(c), " scope=\"col\"");
  out += "</tr></thead>\n<tbody>\n";
  for (const auto& row : table.rows()) {
    out += "<tr>";
    for (size_t c = 0; c < row.size(); ++c) out += Cell("td", row[c], table.align(c));
    out += "</tr>\n";
  }
  return out + "</tbody>\n</table>\n";
}

HtmlPage::HtmlPage(std::string title) : title_(std::move(title)) {}

std::string& HtmlPage::Body() { return sections_.empty() ? intro_ : sections_.back().body; }

void HtmlPage::Section(const std::string& heading) {
  sections_.push_back(Part{heading, "s" + std::to_string(sections_.size() + 1), ""});
}

void HtmlPage::Heading(const std::string& text, int level) {
  PC_CHECK(level >= 3 && level <= 6, "html page: heading level must be 3..6 (got ", level, "; level 2 is Section)");
  const std::string tag = "h" + std::to_string(level);
  Body() += "<" + tag + ">" + EscapeLines(text) + "</" + tag + ">\n";
}

void HtmlPage::Paragraph(const std::string& text) {
  Body() += "<p>" + EscapeLines(text) + "</p>\n";
}

void HtmlPage::List(const std::vector<std::string>& items) {
  std::string out = "<ul>\n";
  for (const auto& item : items) out += "<li>" + EscapeLines(item) + "</li>\n";
  Body() += out + "</ul>\n";
}

void HtmlPage::Table(const TextTable& table, const std::string& caption) {
  Body() += ToHtml(table, caption);
}

void HtmlPage::Figure(const std::string& svg, const std::string& caption) {
  PC_CHECK(StartsWith(svg, "<svg"), "html page: a figure must be an SVG document from reports/svg.h (got '",
           svg.substr(0, 20), "...')");
  std::string out = "<figure>\n" + svg;
  if (!svg.empty() && svg.back() != '\n') out += "\n";
  if (!caption.empty()) out += "<figcaption>" + EscapeLines(caption) + "</figcaption>\n";
  Body() += out + "</figure>\n";
}

void HtmlPage::Pre(const std::string& text) {
  Body() += "<pre>" + EscapeXml(text) + "</pre>\n";
}

std::string HtmlPage::Render() const {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n";
  out += "<title>" + EscapeXml(title_) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n";
  out += "<header><h1>" + EscapeXml(title_) + "</h1></header>\n";
  if (sections_.size() >= 2) {
    out += "<nav><ul>\n";
    for (const auto& s : sections_) out += "<li><a href=\"#" + s.id + "\">" + EscapeXml(s.heading) + "</a></li>\n";
    out += "</ul></nav>\n";
  }
  out += "<main>\n" + intro_;
  for (const auto& s : sections_) {
    out += "<section id=\"" + s.id + "\">\n<h2>" + EscapeXml(s.heading) + "</h2>\n" + s.body + "</section>\n";
  }
  return out + "</main>\n</body>\n</html>\n";
}

}  // namespace pc::reports
