// reports/svg.h — self-contained SVG charts for the reports: no scripts, no external resources,
// presentation attributes only, every text escaped. Each function returns one <svg> document that
// can be written to a .svg file or placed inline in an HtmlPage (HtmlPage::Figure). Hovering a point,
// bar or cell shows its exact value (<title> tooltips).
//
// Values that cannot be drawn (NaN, infinite, or <= 0 on a log axis) are left out and counted in a
// note at the bottom of the chart; a chart with nothing to draw says so instead of failing.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace pc::reports {

struct AxisSpec {
  std::string title;
  bool log = false;  // log10 axis (ticks at powers of ten)
};

// ---- scatter plot: one point per run, labelled, coloured by group, with a least-squares line ----
struct ScatterPoint {
  double x = 0, y = 0;
  std::string label;  // the run (drawn beside the point and in its tooltip)
  std::string group;  // the method family (colour and legend; "" = one unnamed group)
};
struct ScatterOptions {
  std::string title;
  std::string note;  // a line under the title, e.g. "Spearman ρ = 0.81 [0.62, 0.93], n = 24"
  AxisSpec x, y;
  int width = 680, height = 460;
  bool fit_line = true;      // fitted in the displayed coordinates (on log10 of a log axis), dashed
  bool point_labels = true;  // drawn when there are at most max_labels points (tooltips always)
  size_t max_labels = 60;
};
std::string ScatterPlotSvg(const std::vector<ScatterPoint>& points, const ScatterOptions& options);

// ---- multi-series line chart: e.g. per-layer profiles, x = layer, one line per series ----
struct LineSeries {
  std::string name;
  std::vector<double> x, y;  // same length (else pc::Error naming the series); a NaN y breaks the line
};
struct LineChartOptions {
  std::string title;
  std::string note;
  AxisSpec x, y;
  int width = 720, height = 420;
  bool markers = true;
};
std::string LineChartSvg(const std::vector<LineSeries>& series, const LineChartOptions& options);

// ---- heat map: a matrix with row and column labels, a colour-scale legend and the value in each cell ----
struct HeatMapData {
  std::vector<std::string> rows, columns;
  std::vector<double> values;  // [rows.size() × columns.size()], row-major; NaN = no value (grey cell with "–")
};
enum class ColourScale {
  kSequential,  // low = dark blue, high = yellow (viridis-like)
  kDiverging    // blue < 0 < red, white at 0; the range is symmetric about 0
};
struct HeatMapOptions {
  std::string title;
  std::string note;
  std::string row_title, column_title, value_title;
  ColourScale scale = ColourScale::kSequential;
  std::optional<double> min, max;  // colour range; default: the data's range
  bool show_values = true;
  int digits = 3;        // significant digits of the cell values
  int cell_height = 24;
  int cell_width = 0;    // 0: wide enough for the values
};
std::string HeatMapSvg(const HeatMapData& data, const HeatMapOptions& options);

// ---- horizontal bar chart, optionally with interval whiskers (e.g. a coefficient and its CI) ----
struct Bar {
  std::string label;
  double value = 0;               // NaN: no bar, "n/a" written instead (or `text`)
  std::optional<double> lo, hi;   // whisker
  std::string text;               // written beside the bar; default: the value
};
struct BarChartOptions {
  std::string title;
  std::string note;
  std::string value_title;
  int width = 680;
  int bar_height = 22;
};
std::string BarChartSvg(const std::vector<Bar>& bars, const BarChartOptions& options);

// ---- histogram of values, with optional labelled vertical markers (e.g. at 0 and at the estimate) ----
struct HistogramOptions {
  std::string title;
  std::string note;
  std::string x_title, y_title = "count";
  int bins = 30;
  int width = 680, height = 380;
  std::vector<std::pair<double, std::string>> markers;
};
std::string HistogramSvg(const std::vector<double>& values, const HistogramOptions& options);

}  // namespace pc::reports
