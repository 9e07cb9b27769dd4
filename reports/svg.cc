#include "reports/svg.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "reports/format.h"
#include "reports/stats.h"
#include "reports/svg_canvas.h"

namespace pc::reports {
namespace {

using svg::Anchor;
using svg::Axis;
using svg::Box;
using svg::Canvas;
using svg::TextStyle;

constexpr double kBottomMargin = 58;

double TopMargin(const std::string& note) { return note.empty() ? 40 : 56; }

void CheckSize(const std::string& title, int width, int height) {
  PC_CHECK(width >= 200 && height >= 150, "chart '", title, "': size ", width, "x", height,
           " is too small (at least 200x150)");
}

// The "nothing to draw" chart.
std::string EmptyChart(Canvas& canvas, const std::string& title, const std::string& note, double width,
                       double height, const std::string& why) {
  svg::DrawTitle(canvas, title, note, 12);
  TextStyle s;
  s.anchor = Anchor::kMiddle;
  s.fill = "#888";
  canvas.Text(width / 2, height / 2, why, s);
  return canvas.Finish();
}

// "3 points not drawn (...)" at the bottom left; `what` is the singular ("point").
void OmittedNote(Canvas& canvas, size_t omitted, double height, const std::string& what) {
  if (omitted == 0) return;
  TextStyle s;
  s.size = 10;
  s.fill = "#a33";
  canvas.Text(8, height - 6, Str(omitted, " ", what, omitted == 1 ? "" : "s", " not drawn (not finite, or <= 0 on a log axis)"), s);
}

struct MinMax {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  void Add(double v) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  bool empty() const { return lo > hi; }
  // Widened by `share` of the span on both sides (so points do not sit on the axes), never across 0
  // for data on one side of it; on a log axis by that share of the decades.
  MinMax Padded(bool log, double share = 0.04) const {
    if (!(hi > lo)) return *this;
    if (log) {
      const double f = std::pow(hi / lo, share);
      return MinMax{lo / f, hi * f};
    }
    const double pad = (hi - lo) * share;
    MinMax m{lo - pad, hi + pad};
    if (lo >= 0 && m.lo < 0) m.lo = 0;
    if (hi <= 0 && m.hi > 0) m.hi = 0;
    return m;
  }
};

// The plot box and axes of an x-y chart: y axis first (its labels set the left margin).
struct Frame {
  Box box;
  Axis x, y;
};
Frame LayoutXY(double width, double height, const std::string& note, const MinMax& xs, const MinMax& ys,
               const AxisSpec& x, const AxisSpec& y, double legend_width, bool integer_x) {
  Frame f;
  f.box.top = TopMargin(note);
  f.box.height = height - f.box.top - kBottomMargin;
  f.y = svg::MakeAxis(ys.lo, ys.hi, y.log, f.box.top + f.box.height, f.box.top);
  double widest = 0;
  for (const auto& l : f.y.labels) widest = std::max(widest, svg::TextWidth(l, 10));
  f.box.left = std::max(56.0, widest + 8 + (y.title.empty() ? 8 : 34));
  f.box.width = width - f.box.left - 24 - legend_width;
  f.x = svg::MakeAxis(xs.lo, xs.hi, x.log, f.box.left, f.box.left + f.box.width, 6, integer_x);
  return f;
}

// Pixel of a displayed-coordinate value u (log10 units on a log axis).
double MapUnit(const svg::Scale& s, double u) { return s.p0 + (u - s.d0) / (s.d1 - s.d0) * (s.p1 - s.p0); }
double Unit(const svg::Scale& s, double v) { return s.log ? std::log10(v) : v; }

std::vector<std::string> DistinctInOrder(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const auto& n : names) {
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  }
  return out;
}

std::string Value(double v) { return FormatSignificant(v, 4); }

}  // namespace

std::string ScatterPlotSvg(const std::vector<ScatterPoint>& points, const ScatterOptions& o) {
  CheckSize(o.title, o.width, o.height);
  const double W = o.width, H = o.height;
  Canvas canvas(W, H, o.title);
  const svg::Scale probe_x{0, 1, 0, 1, o.x.log}, probe_y{0, 1, 0, 1, o.y.log};
  std::vector<const ScatterPoint*> shown;
  MinMax xs, ys;
  std::vector<std::string> group_of_point;
  for (const auto& p : points) {
    if (!probe_x.Drawable(p.x) || !probe_y.Drawable(p.y)) continue;
    shown.push_back(&p);
    xs.Add(p.x);
    ys.Add(p.y);
    group_of_point.push_back(p.group);
  }
  if (shown.empty()) return EmptyChart(canvas, o.title, o.note, W, H, "no points to draw");
  const std::vector<std::string> groups = DistinctInOrder(group_of_point);
  const bool legend = groups.size() > 1 || !groups.front().empty();
  const Frame f = LayoutXY(W, H, o.note, xs.Padded(o.x.log), ys.Padded(o.y.log), o.x, o.y,
                           legend ? svg::LegendWidth(groups) : 0, false);

  svg::DrawTitle(canvas, o.title, o.note, 12);
  svg::DrawAxes(canvas, f.box, f.x, f.y, o.x.title, o.y.title);
  if (o.fit_line && shown.size() >= 2) {
    std::vector<double> ux, uy;
    for (const auto* p : shown) {
      ux.push_back(Unit(f.x.scale, p->x));
      uy.push_back(Unit(f.y.scale, p->y));
    }
    if (std::optional<Line> line = FitLine(ux, uy)) {
      double x0 = MapUnit(f.x.scale, f.x.scale.d0), x1 = MapUnit(f.x.scale, f.x.scale.d1);
      double y0 = MapUnit(f.y.scale, line->At(f.x.scale.d0)), y1 = MapUnit(f.y.scale, line->At(f.x.scale.d1));
      if (svg::ClipSegment(f.box, &x0, &y0, &x1, &y1)) canvas.Line(x0, y0, x1, y1, "#888", 1.5, "6 4");
    }
  }
  const bool labels = o.point_labels && shown.size() <= o.max_labels;
  TextStyle label_style;
  label_style.size = 9.5;
  label_style.fill = "#333";
  for (const auto* p : shown) {
    const size_t g = size_t(std::find(groups.begin(), groups.end(), p->group) - groups.begin());
    const double px = f.x.scale.Map(p->x), py = f.y.scale.Map(p->y);
    std::string tip = p->label.empty() ? std::string() : p->label + (p->group.empty() ? "" : " (" + p->group + ")") + ": ";
    tip += "x = " + Value(p->x) + ", y = " + Value(p->y);
    canvas.Circle(px, py, 4.5, svg::SeriesColour(g), "#ffffff", tip);
    if (labels && !p->label.empty()) canvas.Text(px + 6, py - 5, svg::Shorten(p->label, 24), label_style);
  }
  if (legend) svg::DrawLegend(canvas, f.box.right() + 14, f.box.top + 6, groups, false);
  OmittedNote(canvas, points.size() - shown.size(), H, "point");
  return canvas.Finish();
}

std::string LineChartSvg(const std::vector<LineSeries>& series, const LineChartOptions& o) {
  CheckSize(o.title, o.width, o.height);
  const double W = o.width, H = o.height;
  Canvas canvas(W, H, o.title);
  const svg::Scale probe_x{0, 1, 0, 1, o.x.log}, probe_y{0, 1, 0, 1, o.y.log};
  MinMax xs, ys;
  bool integer_x = true;
  size_t omitted = 0;
  std::vector<std::string> names;
  for (const auto& s : series) {
    PC_CHECK(s.x.size() == s.y.size(), "line chart '", o.title, "': series '", s.name, "' has ", s.x.size(),
             " x values but ", s.y.size(), " y values");
    names.push_back(s.name);
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!probe_x.Drawable(s.x[i]) || !probe_y.Drawable(s.y[i])) {
        ++omitted;
        continue;
      }
      xs.Add(s.x[i]);
      ys.Add(s.y[i]);
      integer_x = integer_x && s.x[i] == std::round(s.x[i]);
    }
  }
  if (xs.empty()) return EmptyChart(canvas, o.title, o.note, W, H, "no values to draw");
  const Frame f =
      LayoutXY(W, H, o.note, xs, ys.Padded(o.y.log), o.x, o.y, svg::LegendWidth(names), integer_x && !o.x.log);

  svg::DrawTitle(canvas, o.title, o.note, 12);
  svg::DrawAxes(canvas, f.box, f.x, f.y, o.x.title, o.y.title);
  for (size_t k = 0; k < series.size(); ++k) {
    const LineSeries& s = series[k];
    const std::string colour = svg::SeriesColour(k);
    std::vector<std::pair<double, double>> run;  // the current unbroken stretch
    for (size_t i = 0; i <= s.x.size(); ++i) {
      const bool ok = i < s.x.size() && probe_x.Drawable(s.x[i]) && probe_y.Drawable(s.y[i]);
      if (ok) {
        run.emplace_back(f.x.scale.Map(s.x[i]), f.y.scale.Map(s.y[i]));
        continue;
      }
      canvas.Polyline(run, colour, 2);
      run.clear();
    }
    if (!o.markers) continue;
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!probe_x.Drawable(s.x[i]) || !probe_y.Drawable(s.y[i])) continue;
      canvas.Circle(f.x.scale.Map(s.x[i]), f.y.scale.Map(s.y[i]), 3, colour, "#ffffff",
                    s.name + ": x = " + Value(s.x[i]) + ", y = " + Value(s.y[i]));
    }
  }
  svg::DrawLegend(canvas, f.box.right() + 14, f.box.top + 6, names, true);
  OmittedNote(canvas, omitted, H, "value");
  return canvas.Finish();
}

std::string HeatMapSvg(const HeatMapData& d, const HeatMapOptions& o) {
  const size_t nr = d.rows.size(), nc = d.columns.size();
  PC_CHECK(d.values.size() == nr * nc, "heat map '", o.title, "': ", d.values.size(), " values for ", nr, " rows x ", nc,
           " columns (expected ", nr * nc, ")");
  PC_CHECK(o.digits >= 1 && o.digits <= 17, "heat map '", o.title, "': digits must be 1..17 (got ", o.digits, ")");
  PC_CHECK(o.cell_height >= 8 && o.cell_width >= 0, "heat map '", o.title, "': cell size ", o.cell_width, "x",
           o.cell_height, " is too small");
  MinMax range;
  for (double v : d.values) {
    if (std::isfinite(v)) range.Add(v);
  }
  if (nr == 0 || nc == 0 || range.empty()) {
    Canvas canvas(480, 160, o.title);
    return EmptyChart(canvas, o.title, o.note, 480, 160, "no values to draw");
  }
  double lo = o.min.value_or(range.lo), hi = o.max.value_or(range.hi);
  if (o.scale == ColourScale::kDiverging && !o.min && !o.max) {
    hi = std::max(std::fabs(lo), std::fabs(hi));
    lo = -hi;
  }
  PC_CHECK(lo <= hi, "heat map '", o.title, "': colour range min ", lo, " > max ", hi);
  auto colour = [&](double v) {
    const double t = hi > lo ? (v - lo) / (hi - lo) : 0.5;
    return o.scale == ColourScale::kDiverging ? svg::DivergingColour(t) : svg::SequentialColour(t);
  };

  std::vector<std::string> texts(d.values.size());
  double cell_w = o.cell_width;
  for (size_t i = 0; i < d.values.size(); ++i) {
    if (std::isfinite(d.values[i])) texts[i] = FormatSignificant(d.values[i], o.digits);
    if (o.cell_width == 0) cell_w = std::max(cell_w, svg::TextWidth(texts[i], 10) + 10);
  }
  cell_w = std::max(cell_w, o.cell_width == 0 ? 36.0 : 8.0);
  const double cell_h = o.cell_height;
  double row_label_w = 0, col_label_w = 0;
  for (const auto& r : d.rows) row_label_w = std::max(row_label_w, svg::TextWidth(svg::Shorten(r, 40), 11));
  for (const auto& c : d.columns) col_label_w = std::max(col_label_w, svg::TextWidth(svg::Shorten(c, 40), 11));
  const bool rotate = col_label_w > cell_w - 4;
  const double header_h = rotate ? col_label_w * 0.71 + 16 : 20;

  Box grid;
  grid.left = 12 + (o.row_title.empty() ? 0 : 22) + row_label_w + 8;
  grid.top = TopMargin(o.note) + header_h;
  grid.width = cell_w * double(nc);
  grid.height = cell_h * double(nr);
  const double overflow = rotate ? std::max(0.0, col_label_w * 0.71 - cell_w / 2) : 0;
  const double legend_x = grid.right() + std::max(24.0, overflow + 12);
  double legend_label_w = 0;
  for (double v : {lo, hi}) legend_label_w = std::max(legend_label_w, svg::TextWidth(FormatSignificant(v, 3), 10));
  const double W = std::max(legend_x + 14 + 8 + std::max(legend_label_w, svg::TextWidth(o.value_title, 11) - 14) + 16,
                            svg::TextWidth(o.title, 14) + 24);
  const double H = grid.bottom() + (o.column_title.empty() ? 24 : 44);
  Canvas canvas(W, std::max(H, grid.top + 150), o.title);
  svg::DrawTitle(canvas, o.title, o.note, 12);

  TextStyle label;
  label.middle = true;
  label.anchor = Anchor::kEnd;
  for (size_t r = 0; r < nr; ++r) {
    canvas.Text(grid.left - 6, grid.top + cell_h * (double(r) + 0.5), svg::Shorten(d.rows[r], 40), label);
  }
  label.middle = false;
  for (size_t c = 0; c < nc; ++c) {
    const double cx = grid.left + cell_w * (double(c) + 0.5);
    label.anchor = rotate ? Anchor::kStart : Anchor::kMiddle;
    label.rotate = rotate ? -45 : 0;
    canvas.Text(rotate ? cx - 2 : cx, grid.top - 6, svg::Shorten(d.columns[c], 40), label);
  }
  TextStyle value;
  value.size = 10;
  value.anchor = Anchor::kMiddle;
  value.middle = true;
  for (size_t r = 0; r < nr; ++r) {
    for (size_t c = 0; c < nc; ++c) {
      const double v = d.values[r * nc + c];
      const double x = grid.left + cell_w * double(c), y = grid.top + cell_h * double(r);
      const std::string where = d.rows[r] + " / " + d.columns[c] + ": ";
      if (!std::isfinite(v)) {
        canvas.Rect(x, y, cell_w, cell_h, "#c8c8c8", "#ffffff", where + "no value");
        if (o.show_values) {
          value.fill = "#555";
          canvas.Text(x + cell_w / 2, y + cell_h / 2, "\xe2\x80\x93", value);  // –
        }
        continue;
      }
      const std::string fill = colour(v);
      canvas.Rect(x, y, cell_w, cell_h, fill, "#ffffff", where + Value(v));
      if (o.show_values) {
        value.fill = svg::TextColourOn(fill);
        canvas.Text(x + cell_w / 2, y + cell_h / 2, texts[r * nc + c], value);
      }
    }
  }
  TextStyle axis_title;
  axis_title.size = 12;
  axis_title.anchor = Anchor::kMiddle;
  if (!o.column_title.empty()) canvas.Text(grid.left + grid.width / 2, grid.bottom() + 28, o.column_title, axis_title);
  if (!o.row_title.empty()) {
    axis_title.rotate = -90;
    canvas.Text(20, grid.top + grid.height / 2, o.row_title, axis_title);
  }

  // Colour legend: a vertical bar of small steps, max at the top.
  const double bar_h = std::max(100.0, std::min(grid.height, 220.0)), steps = 48;
  for (int i = 0; i < int(steps); ++i) {
    const double t = 1.0 - (double(i) + 0.5) / steps;
    canvas.Rect(legend_x, grid.top + bar_h * double(i) / steps, 14, bar_h / steps + 0.5,
                o.scale == ColourScale::kDiverging ? svg::DivergingColour(t) : svg::SequentialColour(t));
  }
  canvas.Rect(legend_x, grid.top, 14, bar_h, "none", "#888");
  TextStyle tick;
  tick.size = 10;
  tick.middle = true;
  canvas.Text(legend_x + 20, grid.top, FormatSignificant(hi, 3), tick);
  canvas.Text(legend_x + 20, grid.top + bar_h / 2, FormatSignificant((lo + hi) / 2, 3), tick);
  canvas.Text(legend_x + 20, grid.top + bar_h, FormatSignificant(lo, 3), tick);
  if (!o.value_title.empty()) {
    TextStyle t;
    t.size = 11;
    canvas.Text(legend_x, grid.top - 10, o.value_title, t);
  }
  return canvas.Finish();
}

std::string BarChartSvg(const std::vector<Bar>& bars, const BarChartOptions& o) {
  PC_CHECK(o.bar_height >= 6, "bar chart '", o.title, "': bar height ", o.bar_height, " is too small");
  const double band = o.bar_height + 8;
  const double top = TopMargin(o.note);
  const double H = std::max(150.0, top + band * double(std::max<size_t>(bars.size(), 1)) + kBottomMargin);
  CheckSize(o.title, o.width, int(H));
  const double W = o.width;
  Canvas canvas(W, H, o.title);
  MinMax range;
  range.Add(0);
  double label_w = 0, text_w = 0;
  std::vector<std::string> texts;
  for (const auto& b : bars) {
    if (std::isfinite(b.value)) range.Add(b.value);
    for (const auto& e : {b.lo, b.hi}) {
      if (e && std::isfinite(*e)) range.Add(*e);
    }
    label_w = std::max(label_w, svg::TextWidth(svg::Shorten(b.label, 36), 11));
    texts.push_back(!b.text.empty() ? b.text : std::isfinite(b.value) ? FormatSignificant(b.value, 3) : "n/a");
    text_w = std::max(text_w, svg::TextWidth(texts.back(), 10));
  }
  if (bars.empty()) return EmptyChart(canvas, o.title, o.note, W, H, "no bars to draw");
  Box box;
  box.left = std::max(60.0, label_w + 16);
  box.top = top;
  box.width = W - box.left - text_w - 24;
  box.height = band * double(bars.size());
  PC_CHECK(box.width >= 60, "bar chart '", o.title, "': width ", o.width, " leaves no room for the bars");
  const Axis x = svg::MakeAxis(range.lo, range.hi, false, box.left, box.right());
  // A category axis without ticks: the bar labels stand in for the y tick labels.
  Axis y;
  y.scale = svg::Scale{0, 1, box.bottom(), box.top, false};
  svg::DrawTitle(canvas, o.title, o.note, 12);
  svg::DrawAxes(canvas, box, x, y, o.value_title, "");
  const double zero = x.scale.Map(0);
  canvas.Line(zero, box.top, zero, box.bottom(), "#555");
  TextStyle label;
  label.anchor = Anchor::kEnd;
  label.middle = true;
  TextStyle value;
  value.size = 10;
  value.middle = true;
  value.fill = "#333";
  for (size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    const double cy = box.top + band * (double(i) + 0.5);
    canvas.Text(box.left - 8, cy, svg::Shorten(b.label, 36), label);
    double text_x = zero;
    if (std::isfinite(b.value)) {
      const double end = x.scale.Map(b.value);
      std::string tip = b.label + ": " + Value(b.value);
      if (b.lo && b.hi) tip += " [" + Value(*b.lo) + ", " + Value(*b.hi) + "]";
      canvas.Rect(std::min(zero, end), cy - o.bar_height / 2.0, std::fabs(end - zero), o.bar_height,
                  b.value >= 0 ? svg::SeriesColour(0) : svg::SeriesColour(2), "none", tip);
      text_x = std::max(zero, end);
    }
    if (b.lo && b.hi && std::isfinite(*b.lo) && std::isfinite(*b.hi)) {
      const double l = x.scale.Map(*b.lo), h = x.scale.Map(*b.hi), cap = o.bar_height / 4.0;
      canvas.Line(l, cy, h, cy, "#222", 1.5);
      canvas.Line(l, cy - cap, l, cy + cap, "#222", 1.5);
      canvas.Line(h, cy - cap, h, cy + cap, "#222", 1.5);
      text_x = std::max(text_x, std::max(l, h));
    }
    canvas.Text(text_x + 5, cy, texts[i], value);
  }
  return canvas.Finish();
}

std::string HistogramSvg(const std::vector<double>& values, const HistogramOptions& o) {
  CheckSize(o.title, o.width, o.height);
  PC_CHECK(o.bins >= 1 && o.bins <= 1000, "histogram '", o.title, "': bins must be 1..1000 (got ", o.bins, ")");
  const double W = o.width, H = o.height;
  Canvas canvas(W, H, o.title);
  MinMax range;
  size_t omitted = 0;
  for (double v : values) {
    if (std::isfinite(v)) {
      range.Add(v);
    } else {
      ++omitted;
    }
  }
  if (range.empty()) return EmptyChart(canvas, o.title, o.note, W, H, "no values to draw");
  const double data_lo = range.lo, data_hi = range.hi;
  for (const auto& m : o.markers) {
    if (std::isfinite(m.first)) range.Add(m.first);
  }
  double lo = data_lo, hi = data_hi;
  if (!(hi > lo)) {
    const double pad = lo == 0 ? 0.5 : std::fabs(lo) * 0.05;
    lo -= pad;
    hi += pad;
  }
  const double bin_w = (hi - lo) / o.bins;
  std::vector<size_t> counts(size_t(o.bins), 0);
  for (double v : values) {
    if (!std::isfinite(v)) continue;
    const size_t b = std::min(size_t(o.bins) - 1, size_t(std::max(0.0, std::floor((v - lo) / bin_w))));
    ++counts[b];
  }
  MinMax xs, ys;
  xs.Add(std::min(lo, range.lo));
  xs.Add(std::max(hi, range.hi));
  ys.Add(0);
  ys.Add(double(std::max<size_t>(1, *std::max_element(counts.begin(), counts.end()))));
  const Frame f = LayoutXY(W, H, o.note, xs, ys, AxisSpec{o.x_title, false}, AxisSpec{o.y_title, false}, 0, false);
  svg::DrawTitle(canvas, o.title, o.note, 12);
  svg::DrawAxes(canvas, f.box, f.x, f.y, o.x_title, o.y_title);
  for (size_t b = 0; b < counts.size(); ++b) {
    const double a = lo + bin_w * double(b), e = b + 1 == counts.size() ? hi : a + bin_w;
    const double x0 = f.x.scale.Map(a), x1 = f.x.scale.Map(e), y0 = f.y.scale.Map(double(counts[b]));
    const std::string tip = "[" + Value(a) + ", " + Value(e) + (b + 1 == counts.size() ? "]" : ")") + ": " +
                            std::to_string(counts[b]);
    canvas.Rect(x0, y0, std::max(0.0, x1 - x0 - 0.5), f.box.bottom() - y0, svg::SeriesColour(0), "none", tip);
  }
  TextStyle marker_text;
  marker_text.size = 10;
  marker_text.fill = "#b2182b";
  for (size_t i = 0; i < o.markers.size(); ++i) {
    const auto& [v, text] = o.markers[i];
    if (!std::isfinite(v)) continue;
    const double px = f.x.scale.Map(v);
    canvas.Line(px, f.box.top, px, f.box.bottom(), "#b2182b", 1.5, "5 3");
    canvas.Text(px + 4, f.box.top + 12 + 13 * double(i), text, marker_text);
  }
  OmittedNote(canvas, omitted, H, "value");
  return canvas.Finish();
}

}  // namespace pc::reports
