// reports/html.h — HTML tables and a self-contained HTML5 page: one file, inline CSS, inline SVG
// figures, no scripts, no external resources. All text is escaped (EscapeXml). The output is also
// well-formed XML (void elements self-closed, only the five XML entities), so it can be checked
// with any XML parser.
#pragma once

#include <string>
#include <vector>

#include "reports/table.h"

namespace pc::reports {

// <table> with an optional <caption>, a <thead> row and a <tbody>; right-aligned cells get class "num";
// newlines in cells become <br/>.
std::string ToHtml(const TextTable& table, const std::string& caption = "");

class HtmlPage {
 public:
  explicit HtmlPage(std::string title);

  // Starts a new <section> with an <h2> heading (closing the previous one). Content added before the
  // first Section() goes at the top of the page. With two or more sections the page gets a contents list.
  void Section(const std::string& heading);
  // <h3> .. <h6> inside the current section.
  void Heading(const std::string& text, int level = 3);
  // <p>: plain text, escaped; newlines become <br/>.
  void Paragraph(const std::string& text);
  // <ul> of plain-text items.
  void List(const std::vector<std::string>& items);
  void Table(const TextTable& table, const std::string& caption = "");
  // <figure> holding an inline SVG document from svg.h (must start with "<svg"), with an optional caption.
  void Figure(const std::string& svg, const std::string& caption = "");
  // <pre>: preformatted plain text (a command line, a log excerpt), escaped.
  void Pre(const std::string& text);

  std::string Render() const;

 private:
  struct Part {
    std::string heading, id, body;
  };
  std::string& Body();  // where content goes now: the intro or the last section

  std::string title_;
  std::string intro_;
  std::vector<Part> sections_;
};

}  // namespace pc::reports
