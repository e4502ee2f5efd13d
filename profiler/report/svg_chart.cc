#include "profiler/report/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "profiler/base/category_palette.h"
#include "profiler/base/human_bytes.h"

namespace memprof {
namespace {

constexpr double kCharWidth = 7.0;  // estimated width of a 12px character
constexpr double kLegendRow = 18.0;
constexpr int64_t kMaxTickedBytes = int64_t{1} << 62;  // 4 EiB

// A coordinate with one decimal: "123.4".
std::string Num(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", value);
  return text;
}

std::string Attr(std::string_view name, std::string_view value) {
  return " " + std::string(name) + "=\"" + EscapeXml(value) + "\"";
}

std::string DataAttrs(const DataAttributes& data) {
  std::string out;
  for (const auto& [name, value] : data) out += Attr(name, value);
  return out;
}

std::string Text(double x, double y, std::string_view anchor,
                 std::string_view cls, std::string_view text) {
  return "<text" + Attr("class", cls) + Attr("x", Num(x)) + Attr("y", Num(y)) +
         Attr("text-anchor", anchor) + ">" + EscapeXml(text) + "</text>\n";
}

double TextWidth(std::string_view text) { return kCharWidth * text.size(); }

std::string FormatValue(Units units, int64_t value) {
  switch (units) {
    case Units::kBytes:
      return HumanBytes(value);
    case Units::kMicroseconds: {
      char text[48];
      std::snprintf(text, sizeof text, "%.2f ms", value / 1e3);
      return text;
    }
    default:
      return GroupedInteger(value);
  }
}

// NumberTicks over [lo, hi] in `units`: microseconds are ticked and
// labelled in milliseconds.
std::vector<Tick> AxisTicks(Units units, double lo, double hi) {
  if (units != Units::kMicroseconds) return NumberTicks(lo, hi);
  std::vector<Tick> ticks = NumberTicks(lo / 1e3, hi / 1e3);
  for (Tick& tick : ticks) tick.value *= 1e3;
  return ticks;
}

std::string SvgOpen(std::string_view id, std::string_view kind,
                    std::string_view title, int width, int height,
                    const DataAttributes& data = {}) {
  return "<svg" + Attr("class", "chart") + Attr("id", id) +
         Attr("data-chart", kind) + DataAttrs(data) +
         Attr("xmlns", "http://www.w3.org/2000/svg") +
         Attr("width", std::to_string(width)) +
         Attr("height", std::to_string(height)) +
         Attr("viewBox",
              "0 0 " + std::to_string(width) + " " + std::to_string(height)) +
         Attr("role", "img") + Attr("aria-label", title) +
         Attr("font-family", "sans-serif") + Attr("font-size", "12") + ">\n" +
         "<title>" + EscapeXml(title) + "</title>\n" +
         Text(width / 2.0, 20, "middle", "chart-title", title);
}

// Horizontal grid lines with their labels, and the axis title, rotated.
std::string ValueAxis(const ChartFrame& f, const LinearScale& y,
                      const std::vector<Tick>& ticks, std::string_view title) {
  std::string out = "<g class=\"axis y-axis\">\n";
  for (const Tick& tick : ticks) {
    const std::string at = Num(y(tick.value));
    out += "<line class=\"grid\" x1=\"" + Num(f.PlotLeft()) + "\" x2=\"" +
           Num(f.PlotRight()) + "\" y1=\"" + at + "\" y2=\"" + at +
           "\" stroke=\"#dddddd\"/>\n";
    out += Text(f.PlotLeft() - 6, y(tick.value) + 4, "end", "tick-label",
                tick.label);
  }
  const double middle = (f.PlotTop() + f.PlotBottom()) / 2;
  out += "<text class=\"axis-title\" text-anchor=\"middle\" transform=\"" +
         std::string("translate(16 ") + Num(middle) + ") rotate(-90)\">" +
         EscapeXml(title) + "</text>\n";
  return out + "</g>\n";
}

std::string Baseline(const ChartFrame& f) {
  const std::string base = Num(f.PlotBottom());
  return "<line class=\"baseline\" x1=\"" + Num(f.PlotLeft()) + "\" x2=\"" +
         Num(f.PlotRight()) + "\" y1=\"" + base + "\" y2=\"" + base +
         "\" stroke=\"#333333\"/>\n";
}

std::string XAxis(const ChartFrame& f, const LinearScale& x,
                  const std::vector<Tick>& ticks, std::string_view title) {
  const std::string base = Num(f.PlotBottom());
  std::string out = "<g class=\"axis x-axis\">\n" + Baseline(f);
  for (const Tick& tick : ticks) {
    const std::string at = Num(x(tick.value));
    out += "<line x1=\"" + at + "\" x2=\"" + at + "\" y1=\"" + base +
           "\" y2=\"" + Num(f.PlotBottom() + 5) + "\" stroke=\"#333333\"/>\n";
    out += Text(x(tick.value), f.PlotBottom() + 18, "middle", "tick-label",
                tick.label);
  }
  out += Text((f.PlotLeft() + f.PlotRight()) / 2, f.PlotBottom() + 38, "middle",
              "axis-title", title);
  return out + "</g>\n";
}

// Entries left to right, wrapping to a new row at the frame's width.
struct LegendLayout {
  std::vector<std::pair<double, double>> at;  // swatch corner per entry
  int rows = 0;
};

LegendLayout LayOutLegend(const std::vector<LegendEntry>& entries,
                          const std::string& title, const ChartFrame& f,
                          double top) {
  LegendLayout layout;
  double x = f.PlotLeft();
  double y = top;
  if (!title.empty()) {
    x += TextWidth(title) + 10;
    layout.rows = 1;
  }
  for (const LegendEntry& entry : entries) {
    const double width = 18 + TextWidth(entry.label) + 16;
    if (x > f.PlotLeft() && x + width > f.PlotRight()) {
      x = f.PlotLeft();
      y += kLegendRow;
    }
    if (layout.rows == 0 || y > top + (layout.rows - 1) * kLegendRow) {
      ++layout.rows;
    }
    layout.at.emplace_back(x, y);
    x += width;
  }
  return layout;
}

// The geometry and fill of a bar or a legend swatch, as attributes.
std::string BoxAttrs(double x, double y, double w, double h,
                     std::string_view color, bool light) {
  std::string out = Attr("x", Num(x)) + Attr("y", Num(y)) +
                    Attr("width", Num(w)) + Attr("height", Num(h)) +
                    Attr("fill", color);
  if (light) out += Attr("fill-opacity", "0.3") + Attr("stroke", color);
  return out;
}

// Lays the legend out under the x axis title, after its title, growing the
// frame's bottom margin (not the plot) by the rows past the first.
LegendLayout PlaceLegend(const std::vector<LegendEntry>& entries,
                         const std::string& title, ChartFrame& f) {
  const LegendLayout layout =
      LayOutLegend(entries, title, f, f.PlotBottom() + 54);
  const int extra = static_cast<int>(std::max(0, layout.rows - 1) * kLegendRow);
  f.height += extra;
  f.bottom += extra;
  return layout;
}

std::string Legend(const std::vector<LegendEntry>& entries,
                   const std::string& title, const LegendLayout& layout,
                   const ChartFrame& f) {
  std::string out = "<g class=\"legend\">\n";
  if (!title.empty()) {
    out +=
        Text(f.PlotLeft(), f.PlotBottom() + 65, "start", "legend-title", title);
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    const auto [x, y] = layout.at[i];
    out += "<g class=\"legend-entry\"" + DataAttrs(entries[i].data) + ">" +
           "<rect" +
           BoxAttrs(x, y, 12, 12, entries[i].color, entries[i].light) + "/>" +
           Text(x + 18, y + 11, "start", "legend-label", entries[i].label) +
           "</g>\n";
  }
  return out + "</g>\n";
}

// The indices kept when points closer than a pixel merge: of each run in
// one pixel column, the one with the largest total.
std::vector<size_t> KeptPoints(const std::vector<int64_t>& x,
                               const std::vector<int64_t>& totals,
                               const LinearScale& scale) {
  std::vector<size_t> kept;
  double column = -std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < x.size(); ++i) {
    const double at = std::floor(scale(static_cast<double>(x[i])));
    if (kept.empty() || at > column) {
      kept.push_back(i);
      column = at;
    } else if (totals[i] > totals[kept.back()]) {
      kept.back() = i;
    }
  }
  return kept;
}

int64_t ValueAt(const StackedLayer& layer, size_t i) {
  return i < layer.values.size() ? layer.values[i] : 0;
}

// The outline of one layer: along its top, then back along the layer
// below's top (bottom), each a step function over the kept points.
std::string AreaPath(const std::vector<double>& xs, double x_end,
                     const std::vector<double>& top,
                     const std::vector<double>& bottom) {
  std::string d = "M" + Num(xs[0]) + " " + Num(top[0]);
  for (size_t j = 1; j < xs.size(); ++j) {
    d += "H" + Num(xs[j]) + "V" + Num(top[j]);
  }
  d += "H" + Num(x_end) + "V" + Num(bottom.back());
  for (size_t j = xs.size() - 1; j > 0; --j) {
    d += "H" + Num(xs[j]) + "V" + Num(bottom[j - 1]);
  }
  return d + "H" + Num(xs[0]) + "Z";
}

std::string Areas(const StackedAreaChart& c, const LinearScale& x,
                  const LinearScale& y, double x_end) {
  std::vector<int64_t> totals(c.x.size(), 0);
  for (const StackedLayer& layer : c.layers) {
    for (size_t i = 0; i < c.x.size(); ++i) totals[i] += ValueAt(layer, i);
  }
  const std::vector<size_t> kept = KeptPoints(c.x, totals, x);
  std::vector<double> xs;
  for (size_t i : kept) xs.push_back(x(static_cast<double>(c.x[i])));
  std::vector<int64_t> sum(kept.size(), 0);
  std::vector<double> bottom(kept.size(), y(0));
  std::string out = "<g class=\"areas\">\n";
  for (const StackedLayer& layer : c.layers) {
    std::vector<double> top(kept.size());
    bool any = false;
    for (size_t j = 0; j < kept.size(); ++j) {
      const int64_t value = ValueAt(layer, kept[j]);
      any = any || value != 0;
      sum[j] += value;
      top[j] = y(static_cast<double>(sum[j]));
    }
    if (!any) continue;
    out += "<path class=\"area\"" + DataAttrs(layer.data) +
           Attr("data-points", std::to_string(layer.values.size())) +
           Attr("fill", layer.color) +
           Attr("d", AreaPath(xs, x_end, top, bottom)) + "><title>" +
           EscapeXml(layer.label) + "</title></path>\n";
    bottom = std::move(top);
  }
  return out + "</g>\n";
}

std::string Bands(const std::vector<Band>& bands, const ChartFrame& f,
                  const LinearScale& x) {
  std::string rects = "<g class=\"bands\">\n";
  std::string labels = "<g class=\"band-labels\">\n";
  double row_end[2] = {-1e9, -1e9};  // right edge of the last label per row
  for (const Band& band : bands) {
    const double left = std::max(f.PlotLeft(), x(band.begin));
    const double right = std::min(f.PlotRight(), x(band.end));
    rects += "<rect class=\"band\"" + DataAttrs(band.data) +
             Attr("x", Num(left)) + Attr("y", Num(f.PlotTop())) +
             Attr("width", Num(std::max(0.0, right - left))) +
             Attr("height", Num(f.PlotBottom() - f.PlotTop())) +
             Attr("fill", band.color) + "><title>" + EscapeXml(band.label) +
             "</title></rect>\n";
    const double half = TextWidth(band.label) / 2;
    // Inside the drawing, even over a narrow band at its edge.
    const double center =
        std::max(half + 2, std::min((left + right) / 2, f.width - half - 2));
    for (int row = 0; row < 2; ++row) {
      if (center - half < row_end[row] + 6) continue;
      labels += Text(center, f.PlotTop() - 8 - 15 * row, "middle", "band-label",
                     band.label);
      row_end[row] = center + half;
      break;
    }
  }
  return rects + "</g>\n" + labels + "</g>\n";
}

std::string Markers(const std::vector<Marker>& markers, const ChartFrame& f,
                    const LinearScale& x) {
  std::string out = "<g class=\"markers\">\n";
  for (const Marker& marker : markers) {
    const double at = x(marker.x);
    if (at < f.PlotLeft() || at > f.PlotRight()) continue;
    out += "<line class=\"marker\"" + DataAttrs(marker.data) +
           Attr("x1", Num(at)) + Attr("x2", Num(at)) +
           Attr("y1", Num(f.PlotTop())) + Attr("y2", Num(f.PlotBottom())) +
           " stroke=\"#222222\" stroke-dasharray=\"4 3\"/>\n";
    const bool room = at + 4 + TextWidth(marker.label) <= f.PlotRight();
    out += Text(room ? at + 4 : at - 4, f.PlotTop() + 14,
                room ? "start" : "end", "marker-label", marker.label);
  }
  return out + "</g>\n";
}

// A vertical line from y `low` to y `high` at x, capped `half` px either
// side at both ends.
std::string Whisker(double x, double low, double high, double half) {
  const auto line = [](double x1, double y1, double x2, double y2) {
    return "<line x1=\"" + Num(x1) + "\" y1=\"" + Num(y1) + "\" x2=\"" +
           Num(x2) + "\" y2=\"" + Num(y2) + "\" stroke=\"#222222\"/>";
  };
  return "<g class=\"whisker\">" + line(x, low, x, high) +
         line(x - half, low, x + half, low) +
         line(x - half, high, x + half, high) + "</g>\n";
}

// The smallest 1, 2, 5, 10, 20, 50, 100, 256 or 512 x 1024^k that covers
// max in `intervals` steps; 1 EiB at most (enough for kMaxTickedBytes).
int64_t ByteStep(int64_t max, int64_t intervals) {
  static const int64_t kMultiples[] = {1, 2, 5, 10, 20, 50, 100, 256, 512};
  const int64_t least = (max + intervals - 1) / intervals;
  for (int power = 0; power < 6; ++power) {
    for (const int64_t multiple : kMultiples) {
      const int64_t step = multiple << (10 * power);
      if (step >= least) return step;
    }
  }
  return int64_t{1} << 60;
}

}  // namespace

std::string_view CategoryColor(Category c) {
  return kTableau10[PaletteSlot(c)];
}

std::string_view PhaseTint(Phase p) {
  switch (p) {
    case Phase::kInputs:
      return "#fbf5d9";
    case Phase::kForward:
      return "#e6eef8";
    case Phase::kBackward:
      return "#fcebdc";
    case Phase::kOptimizer:
      return "#e5f2e2";
    case Phase::kZeroGrad:
      return "#ececec";
    default:
      return "#f5f5f5";
  }
}

std::string EscapeXml(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20 && ch != '\t' && ch != '\n' &&
            ch != '\r') {
          out += "\xEF\xBF\xBD";
        } else {
          out += ch;
        }
    }
  }
  return out;
}

std::string ByteTickLabel(int64_t bytes) {
  static const char* const kUnits[] = {"B",   "KiB", "MiB", "GiB",
                                       "TiB", "PiB", "EiB"};
  const uint64_t magnitude =
      bytes < 0 ? -static_cast<uint64_t>(bytes) : static_cast<uint64_t>(bytes);
  int unit = 0;
  while (unit < 6 && magnitude >= (uint64_t{1} << (10 * (unit + 1)))) ++unit;
  char text[48];
  std::snprintf(text, sizeof text, "%.2f",
                static_cast<double>(magnitude) / std::ldexp(1.0, 10 * unit));
  std::string number = text;
  while (number.back() == '0') number.pop_back();
  if (number.back() == '.') number.pop_back();
  return (bytes < 0 ? "-" : "") + number + " " + kUnits[unit];
}

std::vector<Tick> ByteTicks(int64_t max_bytes, int max_intervals) {
  const int64_t max = std::clamp<int64_t>(max_bytes, 1, kMaxTickedBytes);
  const int64_t step = ByteStep(max, std::max(1, max_intervals));
  std::vector<Tick> ticks;
  for (int64_t i = 0;; ++i) {
    ticks.push_back(
        Tick{static_cast<double>(i * step), ByteTickLabel(i * step)});
    if (i * step >= max) break;
  }
  return ticks;
}

std::vector<Tick> NumberTicks(double lo, double hi, int max_intervals) {
  const double span = hi - lo;
  if (!(span > 0) || !std::isfinite(span)) return {Tick{lo, ""}};
  const double rough = span / std::max(1, max_intervals);
  double step = std::pow(10.0, std::floor(std::log10(rough)));
  for (const double multiple : {1.0, 2.0, 5.0, 10.0}) {
    if (multiple * step >= rough * (1 - 1e-9)) {
      step *= multiple;
      break;
    }
  }
  const int decimals =
      step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  std::vector<Tick> ticks;
  for (double i = std::ceil(lo / step - 1e-9); i * step <= hi * (1 + 1e-12);
       ++i) {
    const double value = i * step;
    std::string label;
    if (decimals == 0) {
      label = GroupedInteger(static_cast<int64_t>(std::llround(value)));
    } else {
      char text[48];
      std::snprintf(text, sizeof text, "%.*f", decimals, value);
      label = text;
    }
    ticks.push_back(Tick{value, label});
  }
  return ticks;
}

std::vector<Tick> ValueTicks(Units units, int64_t max, int max_intervals) {
  if (units == Units::kBytes) return ByteTicks(max, max_intervals);
  // Microseconds are ticked in milliseconds, then scaled back.
  const double per_unit = units == Units::kMicroseconds ? 1e3 : 1;
  const double top = static_cast<double>(std::max<int64_t>(max, 1)) / per_unit;
  std::vector<Tick> ticks = NumberTicks(0, top, max_intervals);
  if (ticks.back().value < top * (1 - 1e-12) || ticks.size() < 2) {
    const double step = ticks.size() > 1 ? ticks[1].value - ticks[0].value : 1;
    const std::vector<Tick> longer =
        NumberTicks(0, ticks.back().value + step, max_intervals + 1);
    ticks.push_back(longer.back());
  }
  for (Tick& tick : ticks) tick.value *= per_unit;
  return ticks;
}

double LinearScale::operator()(double value) const {
  const double span = domain_hi - domain_lo;
  if (span == 0) return range_lo;
  return range_lo + (value - domain_lo) / span * (range_hi - range_lo);
}

std::string RenderStackedArea(const StackedAreaChart& c) {
  double lo = c.x.empty() ? 0 : static_cast<double>(c.x.front());
  double hi = c.x.empty() ? 1 : static_cast<double>(c.x.back()) + 1;
  for (const Band& band : c.bands) {
    lo = std::min(lo, band.begin);
    hi = std::max(hi, band.end);
  }
  std::vector<LegendEntry> legend;
  int64_t max_total = 0;
  std::vector<int64_t> totals(c.x.size(), 0);
  for (size_t l = 0; l < c.layers.size(); ++l) {
    const StackedLayer& layer = c.layers[l];
    int64_t largest = 0;
    for (size_t i = 0; i < c.x.size(); ++i) {
      largest = std::max(largest, ValueAt(layer, i));
      totals[i] += ValueAt(layer, i);
      max_total = std::max(max_total, totals[i]);
    }
    legend.push_back(
        LegendEntry{layer.label + " " +
                        FormatValue(c.y_units, l < c.legend_values.size()
                                                   ? c.legend_values[l]
                                                   : largest),
                    layer.color, false, layer.data});
  }
  ChartFrame f = c.frame;
  const LegendLayout placed = PlaceLegend(legend, c.legend_title, f);

  const std::vector<Tick> y_ticks = ValueTicks(c.y_units, max_total);
  const LinearScale x{lo, hi, f.PlotLeft(), f.PlotRight()};
  const LinearScale y{0, y_ticks.back().value, f.PlotBottom(), f.PlotTop()};
  std::string out =
      SvgOpen(c.id, "stacked-area", c.title, f.width, f.height, c.data);
  out += Bands(c.bands, f, x);
  out += ValueAxis(f, y, y_ticks, c.y_title);
  if (!c.x.empty()) out += Areas(c, x, y, x(hi));
  out += XAxis(f, x, AxisTicks(c.x_units, lo, hi), c.x_title);
  out += Markers(c.markers, f, x);
  out += Legend(legend, c.legend_title, placed, f);
  return out + "</svg>\n";
}

std::string RenderGroupedBars(const GroupedBarChart& c) {
  ChartFrame f = c.frame;
  const LegendLayout placed = PlaceLegend(c.legend, "", f);

  int64_t max_value = 0;
  for (const BarGroup& group : c.groups) {
    for (const Bar& bar : group.bars) {
      max_value = std::max(max_value, bar.value);
    }
  }
  for (const BarRange& range : c.ranges) {
    max_value = std::max(max_value, range.high);
  }
  const std::vector<Tick> y_ticks = ValueTicks(c.y_units, max_value);
  const LinearScale y{0, y_ticks.back().value, f.PlotBottom(), f.PlotTop()};
  std::string out = SvgOpen(c.id, "grouped-bars", c.title, f.width, f.height);
  out += ValueAxis(f, y, y_ticks, c.y_title);
  out += Baseline(f);
  const double slot =
      (f.PlotRight() - f.PlotLeft()) / std::max<size_t>(1, c.groups.size());
  for (size_t g = 0; g < c.groups.size(); ++g) {
    const BarGroup& group = c.groups[g];
    const double left = f.PlotLeft() + g * slot + slot * 0.1;
    const double width = slot * 0.8 / std::max<size_t>(1, group.bars.size());
    out += "<g class=\"bar-group\"" + DataAttrs(group.data) + ">\n";
    for (size_t b = 0; b < group.bars.size(); ++b) {
      const Bar& bar = group.bars[b];
      const double top =
          y(static_cast<double>(std::max<int64_t>(bar.value, 0)));
      out += "<rect class=\"bar\"" + DataAttrs(bar.data) +
             BoxAttrs(left + b * width + 0.5, top, std::max(0.5, width - 1),
                      f.PlotBottom() - top, bar.color, bar.light) +
             "><title>" + EscapeXml(bar.tooltip) + "</title></rect>\n";
      for (const BarRange& range : c.ranges) {
        if (range.group != g || range.bar != b) continue;
        out += Whisker(
            left + b * width + width / 2, y(static_cast<double>(range.low)),
            y(static_cast<double>(range.high)), std::min(8.0, width / 3));
      }
      const bool run_end = b + 1 == group.bars.size() ||
                           group.bars[b + 1].sublabel != bar.sublabel;
      size_t first = b;
      while (first > 0 && group.bars[first - 1].sublabel == bar.sublabel) {
        --first;
      }
      if (run_end && !bar.sublabel.empty()) {
        out += Text(left + (first + b + 1) * width / 2, f.PlotBottom() + 13,
                    "middle", "bar-sublabel", bar.sublabel);
      }
    }
    out += Text(left + slot * 0.4, f.PlotBottom() + 30, "middle", "group-label",
                group.label);
    out += "</g>\n";
  }
  out += Legend(c.legend, "", placed, f);
  return out + "</svg>\n";
}

}  // namespace memprof
