#include "reports/svg_canvas.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/error.h"
#include "reports/escape.h"

namespace pc::reports::svg {
namespace {

const char* AnchorName(Anchor a) {
  switch (a) {
    case Anchor::kStart: return "start";
    case Anchor::kMiddle: return "middle";
    case Anchor::kEnd: return "end";
  }
  return "start";
}

std::string Attr(const char* name, const std::string& value) { return std::string(" ") + name + "=\"" + EscapeXml(value) + "\""; }

// Decimals that write `step` (and so every multiple of it) exactly enough.
int DecimalsFor(double step) {
  for (int d = 0; d <= 12; ++d) {
    const double scaled = step * std::pow(10.0, d);
    if (std::fabs(scaled - std::round(scaled)) < 1e-6 * scaled) return d;
  }
  return 12;
}

std::string FormatTick(double v, double step, double max_abs) {
  const int d = DecimalsFor(step);
  char buf[64];
  if (max_abs >= 1e6 || step < 1e-4) {
    const int digits = std::max(1, std::min(15, d + int(std::floor(std::log10(max_abs))) + 1));
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  } else {
    std::snprintf(buf, sizeof buf, "%.*f", d, v);
  }
  return buf;
}

double NiceStep(double raw, bool integer) {
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / mag;
  const double nice = f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10;
  double step = nice * mag;
  if (integer) step = std::max(1.0, std::ceil(step));
  return step;
}

struct Rgb {
  double r, g, b;
};

Rgb ParseHex(const std::string& hex) {
  PC_ASSERT(hex.size() == 7 && hex[0] == '#', "colour ", hex);
  const long v = std::strtol(hex.c_str() + 1, nullptr, 16);
  return Rgb{double((v >> 16) & 255), double((v >> 8) & 255), double(v & 255)};
}

std::string Hex(const Rgb& c) {
  char buf[8];
  auto byte = [](double x) { return int(std::lround(std::min(255.0, std::max(0.0, x)))); };
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", byte(c.r), byte(c.g), byte(c.b));
  return buf;
}

template <size_t N>
std::string Interpolate(const std::array<const char*, N>& stops, double t) {
  if (!std::isfinite(t)) t = 0;
  t = std::min(1.0, std::max(0.0, t));
  const double pos = t * double(N - 1);
  const size_t i = std::min(N - 2, size_t(std::floor(pos)));
  const double f = pos - double(i);
  const Rgb a = ParseHex(stops[i]), b = ParseHex(stops[i + 1]);
  return Hex(Rgb{a.r + f * (b.r - a.r), a.g + f * (b.g - a.g), a.b + f * (b.b - a.b)});
}

}  // namespace

std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  std::string s = buf;
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  if (s == "-0") s = "0";
  return s;
}

Canvas::Canvas(double width, double height, const std::string& title) : width_(width), height_(height), title_(title) {}

std::string Canvas::Close(const char* tag, const std::string& tooltip) {
  if (tooltip.empty()) return "/>\n";
  return "><title>" + EscapeXml(tooltip) + "</title></" + tag + ">\n";
}

void Canvas::Rect(double x, double y, double w, double h, const std::string& fill, const std::string& stroke,
                  const std::string& tooltip) {
  body_ += "<rect x=\"" + Num(x) + "\" y=\"" + Num(y) + "\" width=\"" + Num(std::max(0.0, w)) + "\" height=\"" +
           Num(std::max(0.0, h)) + "\"" + Attr("fill", fill) + Attr("stroke", stroke) + Close("rect", tooltip);
}

void Canvas::Line(double x1, double y1, double x2, double y2, const std::string& stroke, double width,
                  const std::string& dash) {
  body_ += "<line x1=\"" + Num(x1) + "\" y1=\"" + Num(y1) + "\" x2=\"" + Num(x2) + "\" y2=\"" + Num(y2) + "\"" +
           Attr("stroke", stroke) + " stroke-width=\"" + Num(width) + "\"" +
           (dash.empty() ? std::string() : Attr("stroke-dasharray", dash)) + "/>\n";
}

void Canvas::Polyline(const std::vector<std::pair<double, double>>& points, const std::string& stroke, double width) {
  if (points.size() < 2) return;
  std::string pts;
  for (const auto& [x, y] : points) pts += (pts.empty() ? "" : " ") + Num(x) + "," + Num(y);
  body_ += "<polyline points=\"" + pts + "\" fill=\"none\"" + Attr("stroke", stroke) + " stroke-width=\"" + Num(width) +
           "\" stroke-linejoin=\"round\"/>\n";
}

void Canvas::Circle(double cx, double cy, double r, const std::string& fill, const std::string& stroke,
                    const std::string& tooltip) {
  body_ += "<circle cx=\"" + Num(cx) + "\" cy=\"" + Num(cy) + "\" r=\"" + Num(r) + "\"" + Attr("fill", fill) +
           Attr("stroke", stroke) + Close("circle", tooltip);
}

void Canvas::Text(double x, double y, const std::string& text, const TextStyle& style) {
  body_ += "<text x=\"" + Num(x) + "\" y=\"" + Num(y) + "\" font-size=\"" + Num(style.size) + "\" text-anchor=\"" +
           AnchorName(style.anchor) + "\"" + Attr("fill", style.fill);
  if (style.bold) body_ += " font-weight=\"bold\"";
  if (style.middle) body_ += " dominant-baseline=\"central\"";
  if (style.rotate != 0) body_ += " transform=\"rotate(" + Num(style.rotate) + " " + Num(x) + " " + Num(y) + ")\"";
  body_ += ">" + EscapeXml(text) + "</text>\n";
}

std::string Canvas::Finish() const {
  const std::string w = Num(width_), h = Num(height_);
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + w + "\" height=\"" + h + "\" viewBox=\"0 0 " + w +
         " " + h + "\" role=\"img\" font-family=\"Helvetica, Arial, sans-serif\">\n<title>" + EscapeXml(title_) +
         "</title>\n<rect x=\"0\" y=\"0\" width=\"" + w + "\" height=\"" + h + "\" fill=\"#ffffff\"/>\n" + body_ +
         "</svg>\n";
}

double TextWidth(const std::string& text, double size) { return double(DisplayWidth(text)) * size * 0.6; }

std::string Shorten(const std::string& text, size_t max_chars) {
  if (DisplayWidth(text) <= max_chars || max_chars == 0) return text;
  std::string out;
  size_t count = 0;
  for (char c : text) {
    const bool lead = (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    if (lead && ++count > max_chars - 1) break;
    out += c;
  }
  return out + "\xe2\x80\xa6";  // …
}

bool Scale::Drawable(double v) const { return std::isfinite(v) && (!log || v > 0); }

double Scale::Map(double v) const {
  const double u = log ? std::log10(v) : v;
  return p0 + (u - d0) / (d1 - d0) * (p1 - p0);
}

Axis MakeAxis(double lo, double hi, bool log, double p0, double p1, int target, bool integer) {
  PC_ASSERT(std::isfinite(lo) && std::isfinite(hi) && lo <= hi && (!log || lo > 0), "axis range ", lo, "..", hi);
  Axis axis;
  axis.scale.p0 = p0;
  axis.scale.p1 = p1;
  axis.scale.log = log;
  if (log) {
    double d0 = std::log10(lo), d1 = std::log10(hi);
    if (d1 - d0 < 1e-9) {
      d0 -= 0.5;
      d1 += 0.5;
    }
    axis.scale.d0 = d0;
    axis.scale.d1 = d1;
    const double decades = d1 - d0;
    const int every = std::max(1, int(std::ceil(decades / 8)));
    auto inside = [&](double v) { const double u = std::log10(v); return u >= d0 - 1e-9 && u <= d1 + 1e-9; };
    for (int e = int(std::floor(d0)); e <= int(std::ceil(d1)); ++e) {
      for (double m : {1.0, 2.0, 5.0}) {
        if ((m != 1.0 && decades > 3) || (m == 1.0 && e % every != 0)) continue;
        const double v = m * std::pow(10.0, e);
        if (!inside(v)) continue;
        char buf[32];
        std::snprintf(buf, sizeof buf, "%g", v);
        axis.ticks.push_back(v);
        axis.labels.push_back(buf);
      }
    }
    if (axis.ticks.size() < 2) {  // a narrow range: evenly spaced values, drawn on the log scale
      axis.ticks.clear();
      axis.labels.clear();
      const double a = std::pow(10.0, d0), b = std::pow(10.0, d1);
      const double step = NiceStep((b - a) / double(std::max(1, target - 1)), false);
      for (double v = std::ceil(a / step - 1e-9) * step; v <= b * (1 + 1e-12); v += step) {
        axis.ticks.push_back(v);
        axis.labels.push_back(FormatTick(v, step, b));
      }
    }
    return axis;
  }
  if (!(hi > lo)) {
    const double pad = lo == 0 ? 1 : std::fabs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
  const double step = NiceStep((hi - lo) / double(std::max(1, target - 1)), integer);
  const double start = std::floor(lo / step + 1e-9) * step, end = std::ceil(hi / step - 1e-9) * step;
  axis.scale.d0 = start;
  axis.scale.d1 = end;
  const double max_abs = std::max(std::fabs(start), std::fabs(end));
  const int count = int(std::lround((end - start) / step));
  for (int k = 0; k <= count; ++k) {
    double v = start + double(k) * step;
    if (std::fabs(v) < step * 1e-9) v = 0;
    axis.ticks.push_back(v);
    axis.labels.push_back(FormatTick(v, step, max_abs));
  }
  return axis;
}

void DrawAxes(Canvas& canvas, const Box& box, const Axis& x, const Axis& y, const std::string& x_title,
              const std::string& y_title) {
  TextStyle tick;
  tick.size = 10;
  tick.fill = "#444";
  for (size_t i = 0; i < x.ticks.size(); ++i) {
    const double px = x.scale.Map(x.ticks[i]);
    canvas.Line(px, box.top, px, box.bottom(), "#e6e6e6");
    canvas.Line(px, box.bottom(), px, box.bottom() + 5, "#666");
    tick.anchor = Anchor::kMiddle;
    canvas.Text(px, box.bottom() + 17, x.labels[i], tick);
  }
  double widest = 0;
  for (size_t i = 0; i < y.ticks.size(); ++i) {
    const double py = y.scale.Map(y.ticks[i]);
    canvas.Line(box.left, py, box.right(), py, "#e6e6e6");
    canvas.Line(box.left - 5, py, box.left, py, "#666");
    tick.anchor = Anchor::kEnd;
    tick.middle = true;
    canvas.Text(box.left - 8, py, y.labels[i], tick);
    widest = std::max(widest, TextWidth(y.labels[i], tick.size));
  }
  canvas.Line(box.left, box.bottom(), box.right(), box.bottom(), "#666");
  canvas.Line(box.left, box.top, box.left, box.bottom(), "#666");
  TextStyle title;
  title.anchor = Anchor::kMiddle;
  title.size = 12;
  if (!x_title.empty()) canvas.Text(box.left + box.width / 2, box.bottom() + 38, x_title, title);
  if (!y_title.empty()) {
    const double ty = box.top + box.height / 2, tx = box.left - 8 - widest - 12;
    title.rotate = -90;
    canvas.Text(tx, ty, y_title, title);
  }
}

void DrawTitle(Canvas& canvas, const std::string& title, const std::string& note, double left) {
  TextStyle s;
  s.size = 14;
  s.bold = true;
  canvas.Text(left, 22, title, s);
  if (!note.empty()) {
    TextStyle n;
    n.size = 11;
    n.fill = "#555";
    canvas.Text(left, 40, note, n);
  }
}

double LegendWidth(const std::vector<std::string>& names) {
  double w = 0;
  for (const auto& n : names) w = std::max(w, TextWidth(Shorten(n, 28), 11));
  return names.empty() ? 0 : w + 34;
}

void DrawLegend(Canvas& canvas, double x, double y, const std::vector<std::string>& names, bool lines) {
  TextStyle s;
  s.middle = true;
  for (size_t i = 0; i < names.size(); ++i) {
    const double cy = y + 16.0 * double(i);
    if (lines) {
      canvas.Line(x, cy, x + 18, cy, SeriesColour(i), 2.5);
    } else {
      canvas.Rect(x + 4, cy - 5, 10, 10, SeriesColour(i));
    }
    canvas.Text(x + 24, cy, Shorten(names[i], 28), s);
  }
}

std::string SeriesColour(size_t i) {
  static const std::array<const char*, 10> kTableau = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                                       "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
  return kTableau[i % kTableau.size()];
}

std::string SequentialColour(double t) {
  static const std::array<const char*, 9> kViridis = {"#440154", "#472d7b", "#3b528b", "#2c728e", "#21918c",
                                                      "#28ae80", "#5ec962", "#addc30", "#fde725"};
  return Interpolate(kViridis, t);
}

std::string DivergingColour(double t) {
  static const std::array<const char*, 9> kRdBu = {"#2166ac", "#4393c3", "#92c5de", "#d1e5f0", "#f7f7f7",
                                                   "#fddbc7", "#f4a582", "#d6604d", "#b2182b"};
  return Interpolate(kRdBu, t);
}

std::string TextColourOn(const std::string& background) {
  const Rgb c = ParseHex(background);
  return 0.2126 * c.r + 0.7152 * c.g + 0.0722 * c.b > 140 ? "#222" : "#fff";
}

bool ClipSegment(const Box& box, double* x0, double* y0, double* x1, double* y1) {
  const double dx = *x1 - *x0, dy = *y1 - *y0;
  double t0 = 0, t1 = 1;
  const double p[4] = {-dx, dx, -dy, dy};
  const double q[4] = {*x0 - box.left, box.right() - *x0, *y0 - box.top, box.bottom() - *y0};
  for (int i = 0; i < 4; ++i) {
    if (p[i] == 0) {
      if (q[i] < 0) return false;
      continue;
    }
    const double t = q[i] / p[i];
    if (p[i] < 0) {
      t0 = std::max(t0, t);
    } else {
      t1 = std::min(t1, t);
    }
    if (t0 > t1) return false;
  }
  const double ax = *x0, ay = *y0;
  *x0 = ax + t0 * dx;
  *y0 = ay + t0 * dy;
  *x1 = ax + t1 * dx;
  *y1 = ay + t1 * dy;
  return true;
}

}  // namespace pc::reports::svg
