// reports/svg_canvas.h — the drawing layer under svg.h: an SVG document builder whose every text and
// attribute is escaped, data-to-pixel scales with "nice" ticks (linear and log10), colours.
// No element ids are used, so any number of charts can sit inline in one HTML page.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace pc::reports::svg {

// A coordinate or length: at most 2 decimals, trailing zeros dropped ("12.5", "3", "-0.25").
std::string Num(double v);

enum class Anchor { kStart, kMiddle, kEnd };

struct TextStyle {
  double size = 11;
  Anchor anchor = Anchor::kStart;
  std::string fill = "#222";
  bool bold = false;
  double rotate = 0;        // degrees, about (x, y)
  bool middle = false;      // vertically centred on y (dominant-baseline central)
};

class Canvas {
 public:
  Canvas(double width, double height, const std::string& title);

  void Rect(double x, double y, double w, double h, const std::string& fill, const std::string& stroke = "none",
            const std::string& tooltip = "");
  void Line(double x1, double y1, double x2, double y2, const std::string& stroke, double width = 1,
            const std::string& dash = "");
  void Polyline(const std::vector<std::pair<double, double>>& points, const std::string& stroke, double width = 1.5);
  void Circle(double cx, double cy, double r, const std::string& fill, const std::string& stroke = "none",
              const std::string& tooltip = "");
  void Text(double x, double y, const std::string& text, const TextStyle& style = {});

  std::string Finish() const;  // the <svg> document (no XML declaration, so it can be inlined in HTML)

 private:
  // "/>" or, with a tooltip, "><title>tooltip</title></tag>".
  static std::string Close(const char* tag, const std::string& tooltip);
  double width_, height_;
  std::string title_, body_;
};

// Estimated width in pixels of `text` at font `size` (for layout; no font metrics available).
double TextWidth(const std::string& text, double size);
// `text` cut to at most `max_chars` code points, with "…" when cut.
std::string Shorten(const std::string& text, size_t max_chars);

// Maps data values to pixels. For a log axis the domain is in log10 units.
struct Scale {
  double d0 = 0, d1 = 1;  // domain (log10 of the values when log)
  double p0 = 0, p1 = 1;  // pixels
  bool log = false;
  bool Drawable(double v) const;  // finite, and > 0 on a log axis
  double Map(double v) const;     // precondition: Drawable(v)
};

struct Axis {
  Scale scale;
  std::vector<double> ticks;        // data values
  std::vector<std::string> labels;  // one per tick
};

// An axis covering [lo, hi] (data values, lo <= hi, both Drawable) with about `target` ticks at nice
// numbers (1, 2, 2.5, 5 × 10^k; integers only when `integer`); the domain is widened to the outer ticks.
// Log: the domain is [lo, hi] itself; ticks at powers of ten inside it (and 2 and 5 times them over at
// most three decades; every k-th power over many), or evenly spaced values when fewer than two fall inside.
Axis MakeAxis(double lo, double hi, bool log, double p0, double p1, int target = 6, bool integer = false);

// The plot area of a chart, in pixels.
struct Box {
  double left = 0, top = 0, width = 0, height = 0;
  double right() const { return left + width; }
  double bottom() const { return top + height; }
};
// Grid lines, ticks, tick labels and the axis titles along the bottom (x) and left (y) of `box`.
void DrawAxes(Canvas& canvas, const Box& box, const Axis& x, const Axis& y, const std::string& x_title,
              const std::string& y_title);
// The chart title (bold, top left) and an optional note under it.
void DrawTitle(Canvas& canvas, const std::string& title, const std::string& note, double left);
// A legend of coloured swatches, one line per name, starting at (x, y).
void DrawLegend(Canvas& canvas, double x, double y, const std::vector<std::string>& names, bool lines);
// Width a legend of these names needs (0 when there are none).
double LegendWidth(const std::vector<std::string>& names);

// The i-th categorical colour (Tableau 10, repeating).
std::string SeriesColour(size_t i);
// Colour maps for t in [0, 1]: viridis-like sequential; blue-white-red diverging.
std::string SequentialColour(double t);
std::string DivergingColour(double t);
// "#222" or "#fff", whichever reads better on `background` ("#rrggbb").
std::string TextColourOn(const std::string& background);

// The segment (x0,y0)-(x1,y1) clipped to `box` (Liang–Barsky); false when nothing is inside.
bool ClipSegment(const Box& box, double* x0, double* y0, double* x1, double* y1);

}  // namespace pc::reports::svg
