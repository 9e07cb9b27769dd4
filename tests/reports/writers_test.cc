// Escaping, tables as HTML/Markdown/CSV, number formatting, the Markdown document.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "reports/csv.h"
#include "reports/escape.h"
#include "reports/format.h"
#include "reports/html.h"
#include "reports/markdown.h"
#include "reports/table.h"
#include "tests/reports/reports_test_support.h"
#include "tests/test_support.h"

using Catch::Matchers::Contains;
using pc::reports::Align;
using pc::reports::TextTable;

namespace {
// Every character the writers must escape, in one cell.
const std::string kNasty = "a<b & \"c\" 'd' | e, f\\g\nh\r\ni`j`";
}  // namespace

TEST_CASE("escaping: XML", "[reports]") {
  CHECK(pc::reports::EscapeXml("<a & \"b\" 'c'>") == "&lt;a &amp; &quot;b&quot; &#39;c&#39;&gt;");
  CHECK(pc::reports::EscapeXml("caf\xc3\xa9 \xcf\x81") == "caf\xc3\xa9 \xcf\x81");  // valid UTF-8 kept
  CHECK(pc::reports::EscapeXml("bad\xff!") == "bad\xef\xbf\xbd!");                  // invalid byte -> U+FFFD
  CHECK(pc::reports::EscapeXml("ab\xc3") == "ab\xef\xbf\xbd");                      // truncated sequence
  CHECK(pc::reports::EscapeXml(std::string("nul\0x", 5)) == "nul\xef\xbf\xbdx");    // XML-illegal control
  CHECK(pc::reports::EscapeXml("tab\there\nline") == "tab\there\nline");
  CHECK(pc::reports::EscapeXml("\xef\xbf\xbe") == "\xef\xbf\xbd");                  // U+FFFE
}

TEST_CASE("escaping: Markdown cells and CSV fields", "[reports]") {
  CHECK(pc::reports::EscapeMarkdownCell("a|b") == "a\\|b");
  CHECK(pc::reports::EscapeMarkdownCell("x\\") == "x\\\\");  // a trailing backslash cannot eat the next pipe
  CHECK(pc::reports::EscapeMarkdownCell("<b>&amp;") == "&lt;b&gt;&amp;amp;");
  CHECK(pc::reports::EscapeMarkdownCell("one\ntwo\r\nthree\rfour") == "one<br>two<br>three<br>four");
  CHECK(pc::reports::EscapeMarkdownCell("awq_w4_g128 *x*") == "awq_w4_g128 *x*");

  CHECK(pc::reports::EscapeCsvField("plain") == "plain");
  CHECK(pc::reports::EscapeCsvField("") == "");
  CHECK(pc::reports::EscapeCsvField("a,b") == "\"a,b\"");
  CHECK(pc::reports::EscapeCsvField("say \"hi\"") == "\"say \"\"hi\"\"\"");
  CHECK(pc::reports::EscapeCsvField("two\nlines") == "\"two\nlines\"");
  CHECK(pc::reports::EscapeCsvField("cr\r") == "\"cr\r\"");
  CHECK(pc::reports::EscapeCsvField(" padded") == "\" padded\"");
  CHECK(pc::reports::EscapeCsvField("-0.5") == "-0.5");
  CHECK(pc::reports::EscapeCsvField("bad\xff") == "bad\xef\xbf\xbd");
}

TEST_CASE("text table: rows, alignment, errors", "[reports]") {
  TextTable t({"run", "rho", "ci"});
  t.AddRow({"awq", "0.812", "0.812 [0.612, 0.934]"});
  t.AddRow({"rtn", "n/a", "insufficient"});
  t.AddRow({"gptq", "-1e-05", "[0.1, 0.2]"});
  t.AlignNumericColumns();
  CHECK(t.align(0) == Align::kLeft);
  CHECK(t.align(1) == Align::kRight);
  CHECK(t.align(2) == Align::kRight);
  CHECK_THROWS_WITH(t.AddRow({"x"}), Contains("table: row 4 has 1 cells but the header has 3 columns"));
  CHECK_THROWS_WITH(t.SetAlign(3, Align::kRight), Contains("column 3 does not exist (3 columns)"));
  CHECK_THROWS_WITH(TextTable({}), Contains("the header has no columns"));
  CHECK(pc::reports::IsNumericCell(" 3.5 "));
  CHECK(!pc::reports::IsNumericCell("3.5x"));
  CHECK(!pc::reports::IsNumericCell("[1, b]"));
  CHECK(pc::reports::IsPlaceholderCell("n/a: x is constant"));
}

TEST_CASE("text table as Markdown", "[reports]") {
  TextTable t({"run", "value"});
  t.AddRow({"a|b", "1.5"});
  t.AddRow({"long name\nsecond", "-20"});
  t.SetAlign(1, Align::kRight);
  CHECK(pc::reports::ToMarkdown(t) ==
        "| run                 | value |\n"
        "| :------------------ | ----: |\n"
        "| a\\|b                |   1.5 |\n"
        "| long name<br>second |   -20 |\n");
  // UTF-8 pads by code points.
  TextTable u({"\xcf\x81", "x"});
  u.AddRow({"\xcf\x84\xcf\x84\xcf\x84\xcf\x84", "1"});
  CHECK(pc::reports::ToMarkdown(u) == "| \xcf\x81    | x   |\n| :--- | :-- |\n| \xcf\x84\xcf\x84\xcf\x84\xcf\x84 | 1   |\n");
}

TEST_CASE("text table as HTML", "[reports]") {
  TextTable t({"run", "value"});
  t.AddRow({kNasty, "0.5"});
  t.AlignNumericColumns();
  const std::string html = pc::reports::ToHtml(t, "caption <x>");
  CHECK_THAT(html, Contains("<caption>caption &lt;x&gt;</caption>"));
  CHECK_THAT(html, Contains("<th scope=\"col\" class=\"num\">value</th>"));
  CHECK_THAT(html, Contains("<td>a&lt;b &amp; &quot;c&quot; &#39;d&#39; | e, f\\g<br/>h<br/>i`j`</td>"));
  CHECK_THAT(html, Contains("<td class=\"num\">0.5</td>"));
}

TEST_CASE("text table as CSV reads back with Python's csv module", "[reports]") {
  TextTable t({"run", "note", "value"});
  t.AddRow({"awq, w4", kNasty, "0.5"});
  t.AddRow({" lead", "", "-1e-05"});
  t.AddRow({"\"quoted\"", "caf\xc3\xa9", "n/a"});
  const std::string csv = pc::reports::ToCsv(t);
  CHECK(csv.substr(0, 16) == "run,note,value\r\n");
  CHECK_THAT(csv, Contains("\"awq, w4\",\"a<b & \"\"c\"\" 'd' | e, f\\g\nh\r\ni`j`\",0.5\r\n"));
  PC_SKIP_IF(!pc::test::HavePython("csv, json"), "/usr/bin/python3 is absent");
  const std::string dir = pc::test::TempDir("csv");
  pc::test::WriteText(dir + "/t.csv", csv);
  const std::string out = pc::test::RunPythonScript(
      "import csv, json, sys\n"
      "with open(sys.argv[1], newline='', encoding='utf-8') as f:\n"
      "    print(json.dumps(list(csv.reader(f))))\n",
      "'" + dir + "/t.csv'");
  const auto rows = nlohmann::json::parse(out);
  REQUIRE(rows.size() == 4);
  CHECK(rows[0] == nlohmann::json(t.header()));
  for (size_t r = 0; r < t.rows().size(); ++r) CHECK(rows[r + 1] == nlohmann::json(t.rows()[r]));
}

TEST_CASE("number and statistic formatting", "[reports]") {
  CHECK(pc::reports::FormatFixed(0.81234) == "0.812");
  CHECK(pc::reports::FormatFixed(-0.0001) == "0.000");
  CHECK(pc::reports::FormatFixed(-0.0006) == "-0.001");
  CHECK(pc::reports::FormatFixed(NAN) == "nan");
  CHECK(pc::reports::FormatFixed(-INFINITY) == "-inf");
  CHECK(pc::reports::FormatSignificant(1.23456e-5) == "1.235e-05");
  CHECK(pc::reports::FormatSignificant(1234.5, 4) == "1234");
  CHECK(pc::reports::FormatStat(pc::reports::Stat::Of(0.5)) == "0.500");
  CHECK(pc::reports::FormatStat(pc::reports::Stat::Insufficient("3 observations")) == "insufficient");
  CHECK(pc::reports::FormatStat(pc::reports::Stat::NotApplicable("x is constant")) == "n/a");
  CHECK(pc::reports::FormatInterval(0.25, 0.75, 2) == "[0.25, 0.75]");
  CHECK(pc::reports::FormatInterval(std::nullopt, 0.75) == "");
  pc::reports::BootstrapInterval b;
  b.estimate = pc::reports::Stat::Of(0.8);
  CHECK(pc::reports::FormatWithInterval(b) == "0.800");
  b.lo = 0.61;
  b.hi = 0.93;
  CHECK(pc::reports::FormatWithInterval(b) == "0.800 [0.610, 0.930]");
}

TEST_CASE("markdown document", "[reports]") {
  pc::reports::MarkdownDocument doc("Ranking <draft>");
  doc.Heading("Correlations | all");
  doc.Paragraph("**Spearman** on `24` runs.\n");
  doc.List({"seed 7", "a|b"});
  TextTable t({"a"});
  t.AddRow({"1"});
  doc.Table(t);
  doc.Code("x = ```y```\n");
  doc.Image("scatter [perp]", "plots/scatter perp.svg");
  CHECK(doc.Render() ==
        "# Ranking &lt;draft&gt;\n\n"
        "## Correlations \\| all\n\n"
        "**Spearman** on `24` runs.\n\n"
        "- seed 7\n- a\\|b\n\n"
        "| a   |\n| :-- |\n| 1   |\n\n"
        "````\nx = ```y```\n````\n\n"
        "![scatter \\[perp\\]](plots/scatter%20perp.svg)\n");
  CHECK_THROWS_WITH(doc.Heading("x", 1), Contains("heading level must be 2..6 (got 1)"));
}

TEST_CASE("html page: structure and errors", "[reports]") {
  pc::reports::HtmlPage page("Title & <more>");
  page.Paragraph("intro");
  page.Section("First");
  page.Heading("Sub");
  page.Pre("a < b && c");
  page.Section("Second");
  page.List({"x & y"});
  const std::string html = page.Render();
  CHECK(html.rfind("<!DOCTYPE html>\n<html lang=\"en\">", 0) == 0);
  CHECK_THAT(html, Contains("<meta charset=\"utf-8\"/>"));
  CHECK_THAT(html, Contains("<title>Title &amp; &lt;more&gt;</title>"));
  CHECK_THAT(html, Contains("<nav><ul>\n<li><a href=\"#s1\">First</a></li>\n<li><a href=\"#s2\">Second</a></li>"));
  CHECK_THAT(html, Contains("<section id=\"s1\">\n<h2>First</h2>\n<h3>Sub</h3>\n<pre>a &lt; b &amp;&amp; c</pre>"));
  CHECK_THAT(html, Contains("<li>x &amp; y</li>"));
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("http") == std::string::npos);  // no external resources (no SVG on this page)
  CHECK_THROWS_WITH(page.Figure("<div>not svg</div>"), Contains("a figure must be an SVG document"));
  CHECK_THROWS_WITH(page.Heading("x", 2), Contains("heading level must be 3..6 (got 2; level 2 is Section)"));
}
