// SVG charts and the HTML page: well-formed XML (checked by Python's xml.etree), escaped text,
// no NaN in coordinates, the expected elements.
#include <catch2/catch.hpp>

#include <cmath>
#include <regex>

#include "core/error.h"
#include "core/strings.h"
#include "reports/bootstrap.h"
#include "reports/format.h"
#include "reports/html.h"
#include "reports/svg.h"
#include "reports/svg_canvas.h"
#include "reports/table.h"
#include "tests/reports/reports_test_support.h"
#include "tests/test_support.h"

using Catch::Matchers::Contains;
using namespace pc::reports;

namespace {

const std::string kNasty = "a<b & \"c\" 'd'\nnext \x01 bad\xff";
const std::string kNastyEscaped = "a&lt;b &amp; &quot;c&quot; &#39;d&#39;\nnext \xef\xbf\xbd bad\xef\xbf\xbd";

// One chart of every kind, with hostile labels and values that cannot be drawn.
std::vector<std::pair<std::string, std::string>> AllCharts() {
  std::vector<std::pair<std::string, std::string>> charts;
  std::vector<ScatterPoint> pts;
  for (int i = 0; i < 12; ++i) {
    pts.push_back({0.001 * (i + 1) * (i + 1), 0.1 * i + 0.05, i == 3 ? kNasty : pc::Str("run", i), i % 3 ? "awq" : kNasty});
  }
  pts.push_back({NAN, 1, "nan", "awq"});
  pts.push_back({-1, 1, "negative", "awq"});
  ScatterOptions so;
  so.title = "scatter " + kNasty;
  so.note = "Spearman \xcf\x81 = 0.9";
  so.x = {"perp " + kNasty, true};
  so.y = {"\xce\x94NLL", false};
  charts.emplace_back("scatter", ScatterPlotSvg(pts, so));
  so.x.log = false;
  so.y.log = true;
  charts.emplace_back("scatter_logy", ScatterPlotSvg(pts, so));
  charts.emplace_back("scatter_empty", ScatterPlotSvg({}, so));

  std::vector<LineSeries> lines = {{"perp", {0, 1, 2, 3, 4, 5}, {0.1, 0.2, NAN, 0.5, 0.4, 0.6}},
                                   {kNasty, {0, 1, 2, 3, 4, 5}, {0.3, 0.1, 0.2, 0.2, 0.25, 0.3}},
                                   {"flat", {0, 5}, {0.2, 0.2}}};
  LineChartOptions lo;
  lo.title = "per layer " + kNasty;
  lo.x = {"layer", false};
  lo.y = {"relative error", false};
  charts.emplace_back("lines", LineChartSvg(lines, lo));
  lo.y.log = true;
  charts.emplace_back("lines_log", LineChartSvg(lines, lo));
  charts.emplace_back("lines_constant", LineChartSvg({{"c", {1, 2, 3}, {5, 5, 5}}}, lo));

  HeatMapData hm{{"awq", "rtn " + kNasty, "wanda"}, {"q_proj", "k_proj", "a very long column label", kNasty}, {}};
  for (int i = 0; i < 12; ++i) hm.values.push_back(i == 5 ? NAN : std::sin(i) * 1e-3);
  HeatMapOptions ho;
  ho.title = "heat " + kNasty;
  ho.row_title = "recipe";
  ho.column_title = "linear";
  ho.value_title = "rel. perp";
  charts.emplace_back("heat", HeatMapSvg(hm, ho));
  ho.scale = ColourScale::kDiverging;
  charts.emplace_back("heat_diverging", HeatMapSvg(hm, ho));
  charts.emplace_back("heat_empty", HeatMapSvg({}, ho));

  std::vector<Bar> bars = {{"perp", 0.8, 0.6, 0.9, ""}, {"iso", -0.2, -0.5, 0.1, ""}, {kNasty, NAN, {}, {}, "insufficient"}};
  BarChartOptions bo;
  bo.title = "coefficients " + kNasty;
  bo.value_title = "Spearman \xcf\x81";
  charts.emplace_back("bars", BarChartSvg(bars, bo));
  charts.emplace_back("bars_empty", BarChartSvg({}, bo));

  std::vector<double> values;
  for (int i = 0; i < 500; ++i) values.push_back(std::sin(i * 0.37) * 0.2 + 0.1);
  values.push_back(NAN);
  HistogramOptions hmo;
  hmo.title = "difference " + kNasty;
  hmo.x_title = "\xcf\x81(perp) - \xcf\x81(iso)";
  hmo.markers = {{0.0, "0"}, {0.1, "estimate " + kNasty}};
  charts.emplace_back("hist", HistogramSvg(values, hmo));
  charts.emplace_back("hist_constant", HistogramSvg({2, 2, 2}, hmo));
  return charts;
}

// Attribute values that are not numbers where numbers belong.
bool HasBadNumber(const std::string& svg) {
  static const std::regex bad("=\"-?(nan|inf)", std::regex::icase);
  return std::regex_search(svg, bad);
}

const char kParseScript[] = R"(
import sys, xml.etree.ElementTree as ET
SVG = "{http://www.w3.org/2000/svg}"
for path in sys.argv[1:]:
    root = ET.parse(path).getroot()
    texts = "".join(t.text or "" for t in root.iter(SVG + "text"))
    print(path.rsplit("/", 1)[-1], root.tag == SVG + "svg", len(list(root.iter())), "a<b & \"c\" 'd'" in texts)
)";

}  // namespace

TEST_CASE("svg charts are well-formed XML with escaped text", "[reports]") {
  const auto charts = AllCharts();
  for (const auto& [name, svg] : charts) {
    INFO(name);
    CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
    CHECK(!HasBadNumber(svg));
    CHECK(svg.find("<script") == std::string::npos);
    CHECK(svg.find("href") == std::string::npos);
    CHECK(svg.find("\x01") == std::string::npos);
    CHECK(svg.find("\xff") == std::string::npos);
  }
  CHECK_THAT(charts[0].second, Contains(kNastyEscaped));
  CHECK_THAT(charts[0].second, Contains("2 points not drawn"));
  CHECK_THAT(charts[2].second, Contains("no points to draw"));
  CHECK_THAT(charts[3].second, Contains("1 value not drawn"));

  PC_SKIP_IF(!pc::test::HavePython("xml.etree.ElementTree"), "/usr/bin/python3 is absent");
  const std::string dir = pc::test::TempDir("svg");
  std::string args;
  for (const auto& [name, svg] : charts) {
    pc::test::WriteText(dir + "/" + name + ".svg", svg);
    args += " '" + dir + "/" + name + ".svg'";
  }
  const std::vector<std::string> lines = pc::Split(pc::Trim(pc::test::RunPythonScript(kParseScript, args)), '\n');
  REQUIRE(lines.size() == charts.size());
  for (size_t i = 0; i < charts.size(); ++i) {
    const std::vector<std::string> f = pc::Split(lines[i], ' ');
    INFO(lines[i]);
    REQUIRE(f.size() == 4);
    CHECK(f[0] == charts[i].first + ".svg");
    CHECK(f[1] == "True");
    CHECK(pc::ParseInt(f[2], "element count") > 3);
    // The hostile label reads back unescaped wherever it was drawn (empty charts draw only the title).
    if (charts[i].first.find("empty") == std::string::npos) CHECK(f[3] == "True");
  }
}

TEST_CASE("svg: geometry of a scatter plot and a heat map", "[reports]") {
  ScatterOptions so;
  so.title = "t";
  so.fit_line = true;
  const std::string svg = ScatterPlotSvg({{1, 1, "a", ""}, {2, 2, "b", ""}, {3, 3, "c", ""}}, so);
  CHECK(std::count(svg.begin(), svg.end(), '\n') > 10);
  size_t circles = 0;
  for (size_t p = svg.find("<circle"); p != std::string::npos; p = svg.find("<circle", p + 1)) ++circles;
  CHECK(circles == 3);
  CHECK_THAT(svg, Contains("stroke-dasharray=\"6 4\""));  // the fitted line
  CHECK_THAT(svg, Contains("<title>a: x = 1, y = 1</title>"));
  CHECK(svg.find("<text x=\"") != std::string::npos);

  HeatMapData hm{{"r1", "r2"}, {"c1", "c2", "c3"}, {1, 2, 3, 4, 5, 6}};
  HeatMapOptions ho;
  const std::string heat = HeatMapSvg(hm, ho);
  for (const char* v : {">1</text>", ">6</text>", "r2 / c3: 6"}) CHECK_THAT(heat, Contains(v));
  CHECK_THAT(heat, Contains("fill=\"#440154\""));  // the lowest value gets the first colour
  CHECK_THAT(heat, Contains("fill=\"#fde725\""));  // the highest the last
  hm.values.pop_back();
  CHECK_THROWS_WITH(HeatMapSvg(hm, ho), Contains("5 values for 2 rows x 3 columns (expected 6)"));
  CHECK_THROWS_WITH(LineChartSvg({{"s", {1, 2}, {1}}}, LineChartOptions{}), Contains("series 's' has 2 x values but 1 y values"));
  ScatterOptions tiny;
  tiny.width = 50;
  CHECK_THROWS_WITH(ScatterPlotSvg({}, tiny), Contains("size 50x460 is too small"));
  HistogramOptions hist;
  hist.bins = 0;
  CHECK_THROWS_WITH(HistogramSvg({1}, hist), Contains("bins must be 1..1000 (got 0)"));
}

TEST_CASE("svg axes: nice ticks, log ticks, clipping", "[reports]") {
  const svg::Axis a = svg::MakeAxis(0.3, 0.95, false, 0, 100);
  CHECK(a.labels == std::vector<std::string>{"0.2", "0.4", "0.6", "0.8", "1.0"});
  CHECK(a.labels.back() == "1.0");
  CHECK(a.scale.Map(a.ticks.front()) == Approx(0));
  CHECK(a.scale.Map(a.ticks.back()) == Approx(100));
  const svg::Axis layers = svg::MakeAxis(0, 23, false, 0, 100, 6, true);
  CHECK(layers.labels == std::vector<std::string>{"0", "5", "10", "15", "20", "25"});
  const svg::Axis small = svg::MakeAxis(1e-6, 3e-6, false, 0, 100);
  CHECK(small.labels.front() == "1e-06");
  const svg::Axis log = svg::MakeAxis(0.002, 0.5, true, 0, 100);
  CHECK(log.labels == std::vector<std::string>{"0.002", "0.005", "0.01", "0.02", "0.05", "0.1", "0.2", "0.5"});
  CHECK(log.scale.Map(0.002) == Approx(0));
  CHECK(log.scale.Map(0.5) == Approx(100));
  CHECK(svg::MakeAxis(1e-9, 1e3, true, 0, 100).labels ==
        std::vector<std::string>{"1e-08", "1e-06", "0.0001", "0.01", "1", "100"});  // every 2nd power of ten
  const svg::Axis narrow = svg::MakeAxis(0.3, 0.6, true, 0, 100);
  CHECK(narrow.labels == std::vector<std::string>{"0.3", "0.4", "0.5", "0.6"});
  const svg::Axis same = svg::MakeAxis(5, 5, false, 0, 100);
  CHECK(same.ticks.front() < 5);
  CHECK(same.ticks.back() > 5);

  svg::Box box{0, 0, 10, 10};
  double x0 = -5, y0 = 5, x1 = 15, y1 = 5;
  REQUIRE(svg::ClipSegment(box, &x0, &y0, &x1, &y1));
  CHECK(x0 == 0);
  CHECK(x1 == 10);
  x0 = -5, y0 = -5, x1 = -1, y1 = 20;
  CHECK(!svg::ClipSegment(box, &x0, &y0, &x1, &y1));
  CHECK(svg::Num(-0.001) == "0");
  CHECK(svg::Num(12.5) == "12.5");
  CHECK(svg::Shorten("abcdef", 4) == "abc\xe2\x80\xa6");
}

TEST_CASE("html page with figures and tables is well-formed and complete", "[reports]") {
  // A page shaped like `perpcomp rank`'s: synthetic runs, coefficients with intervals, plots.
  std::mt19937_64 rng(42);
  std::vector<double> loss, perp, iso;
  std::vector<std::string> names, family;
  for (int i = 0; i < 16; ++i) {
    const double d = 0.02 + pc::test::Uniform(rng);
    loss.push_back(d);
    perp.push_back(d * (0.8 + 0.4 * pc::test::Uniform(rng)));
    iso.push_back(d + pc::test::Uniform(rng));
    names.push_back(pc::Str(i % 2 ? "awq-w" : "rtn-w", 2 + i % 4, "g", 32 << (i % 3)));
    family.push_back(i % 2 ? "awq" : "rtn & co");
  }
  HtmlPage page("perpcomp rank: tiny <model>");
  page.Paragraph("16 runs; bootstrap B = 2000, seed 7.");
  page.Section("Correlations");
  TextTable t({"predictor", "Spearman \xcf\x81", "Kendall \xcf\x84-b"});
  for (const auto& [name, values] : {std::pair{"perp", perp}, std::pair{"iso", iso}}) {
    const auto b = BootstrapCorrelations(values, loss, BootstrapOptions{2000, 7, 0.95});
    t.AddRow({name, FormatWithInterval(b[2]), FormatWithInterval(b[3])});
  }
  t.AlignNumericColumns();
  page.Table(t, "coefficients with 95% intervals");
  std::vector<ScatterPoint> pts;
  for (size_t i = 0; i < loss.size(); ++i) pts.push_back({perp[i], loss[i], names[i], family[i]});
  page.Figure(ScatterPlotSvg(pts, ScatterOptions{"loss vs perp", "", {"perp", true}, {"loss", false}}), "scatter");
  page.Section("Difference");
  DifferenceSpec spec;
  const auto d = BootstrapCorrelationDifference(perp, iso, loss, spec, BootstrapOptions{2000, 7, 0.95});
  HistogramOptions ho;
  ho.title = "rho(perp) - rho(iso)";
  ho.markers = {{0, "0"}, {*d.estimate.value, "estimate"}};
  page.Figure(HistogramSvg(d.samples, ho));
  page.Figure(BarChartSvg({{"perp", 0.9, 0.8, 0.95, ""}, {"iso", 0.5, 0.2, 0.7, ""}}, BarChartOptions{}));
  TextTable ranking({"run", "loss rank", "perp rank"});
  const auto loss_ranks = DamageRanks(loss, Orientation::kHigherIsWorse);
  const auto perp_ranks = DamageRanks(perp, Orientation::kHigherIsWorse);
  for (size_t i : OrderByDamage(loss, Orientation::kHigherIsWorse)) {
    ranking.AddRow({names[i], FormatSignificant(loss_ranks[i]), FormatSignificant(perp_ranks[i])});
  }
  page.Table(ranking);
  page.Pre("perpcomp rank --results sweep.h5 --out report/ <&>");
  const std::string html = page.Render();
  CHECK(html.find("<script") == std::string::npos);

  PC_SKIP_IF(!pc::test::HavePython("xml.etree.ElementTree"), "/usr/bin/python3 is absent");
  const std::string dir = pc::test::TempDir("html");
  pc::test::WriteText(dir + "/report.html", html);
  const std::string out = pc::test::RunPythonScript(R"(
import sys, xml.etree.ElementTree as ET
from html.parser import HTMLParser
root = ET.parse(sys.argv[1]).getroot()
SVG = "{http://www.w3.org/2000/svg}"
print(len(list(root.iter(SVG + "svg"))), len(list(root.iter("table"))), len(list(root.iter("section"))),
      len(list(root.iter("figure"))), root.find("head/title").text)
HTMLParser().feed(open(sys.argv[1], encoding="utf-8").read())  # the HTML parser accepts it too
)",
                                                    "'" + dir + "/report.html'");
  CHECK(pc::Trim(out) == "3 2 2 3 perpcomp rank: tiny <model>");
}
