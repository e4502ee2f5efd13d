// Charts drawn as inline SVG for report.html: linear scales, "nice" ticks in
// binary byte units, axes, a legend, stacked areas and grouped bars. Every
// data element (area, bar, band, marker, legend entry) carries the figures it
// shows as data-* attributes, so a test can find it with its data. No
// LibTorch; the only vocabulary it knows is profiler/base/category.h's.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "profiler/base/category.h"

namespace memprof {

// One fixed colour per category ("#4e79a7"), the same in every chart and
// in PyTorch's memory viewer (Note [Category colours] in
// profiler/base/category_palette.h).
std::string_view CategoryColor(Category c);
// A light background tint for a band of the timeline in phase p.
std::string_view PhaseTint(Phase p);

// Text for XML or HTML, as content or as a quoted attribute value: & < > " '
// escaped; control characters other than tab, newline and carriage return
// (not allowed in XML) replaced by U+FFFD.
std::string EscapeXml(std::string_view text);

struct Tick {
  double value = 0;
  std::string label;
};

// What an axis counts. kMicroseconds: values in microseconds, labelled in
// milliseconds ("1.5").
enum class Units { kBytes, kCount, kMicroseconds };

// Ticks 0, s, 2s, ... up to the first multiple of s at or above max_bytes,
// with at most max_intervals intervals: s is 1, 2, 5, 10, 20, 50, 100, 256
// or 512 times a power of 1024, so every label is exact in binary units
// ("0 B", "512 KiB", "1.25 MiB"). max_bytes <= 0 gives 0 and 1 B.
std::vector<Tick> ByteTicks(int64_t max_bytes, int max_intervals = 6);
// The label of a tick value: its largest binary unit, at most two decimals,
// trailing zeros dropped ("768 KiB", "1.5 MiB", "5 GiB").
std::string ByteTickLabel(int64_t bytes);

// Ticks at the multiples of a 1, 2 or 5 x 10^k step inside [lo, hi], at most
// max_intervals steps apart from lo to hi; integers labelled "12,000".
std::vector<Tick> NumberTicks(double lo, double hi, int max_intervals = 6);

// Ticks from 0 to at least max for a value axis (bytes, plain counts or
// microseconds labelled in milliseconds).
std::vector<Tick> ValueTicks(Units units, int64_t max, int max_intervals = 6);

// Maps [domain_lo, domain_hi] linearly onto [range_lo, range_hi].
struct LinearScale {
  double domain_lo = 0;
  double domain_hi = 1;
  double range_lo = 0;
  double range_hi = 1;
  double operator()(double value) const;
};

// The drawing's size and margins; the plot area lies inside the margins.
struct ChartFrame {
  int width = 900;
  int height = 400;
  int left = 84;
  int right = 24;
  int top = 64;
  int bottom = 96;
  double PlotLeft() const { return left; }
  double PlotRight() const { return width - right; }
  double PlotTop() const { return top; }
  double PlotBottom() const { return height - bottom; }
};

// data-* attributes as written: {"data-category", "weights"}, in order.
using DataAttributes = std::vector<std::pair<std::string, std::string>>;

struct LegendEntry {
  std::string label;
  std::string color;
  bool light = false;   // the swatch is drawn like a light bar
  DataAttributes data;  // on the entry's <g class="legend-entry">
};

// One layer of a stacked chart, bottom first.
struct StackedLayer {
  std::string label;
  std::string color;
  std::vector<int64_t> values;  // one per x
  DataAttributes data;          // on the layer's <path class="area">
};

// A labelled x range drawn behind the data (a phase of the step).
struct Band {
  double begin = 0;
  double end = 0;
  std::string label;
  std::string color;
  DataAttributes data;  // on the band's <rect class="band">
};

// A labelled vertical line (the peak).
struct Marker {
  double x = 0;
  std::string label;
  DataAttributes data;  // on the marker's <line class="marker">
};

struct StackedAreaChart {
  std::string id;       // the <svg class="chart"> id
  DataAttributes data;  // on the <svg>
  std::string title;
  std::string x_title;
  std::string y_title;
  Units x_units = Units::kCount;
  Units y_units = Units::kBytes;
  // What the legend's figures are ("at the peak:"), first in the legend.
  std::string legend_title;
  // The legend's figure per layer; empty: each layer's largest value.
  std::vector<int64_t> legend_values;
  ChartFrame frame;
  std::vector<int64_t> x;  // increasing
  std::vector<StackedLayer> layers;
  std::vector<Band> bands;
  std::vector<Marker> markers;
};

// Each value holds from its x to the next x (the last one for one unit): a
// step function. Points closer than a pixel are merged, keeping the one with
// the largest total. A layer that is zero throughout draws no area; every
// layer has a legend entry with its legend value (or largest value). Every
// label lies inside the drawing: a band label that would stick out is moved
// in, or left out when it would overlap another (its band keeps its
// <title>).
std::string RenderStackedArea(const StackedAreaChart& chart);

struct Bar {
  int64_t value = 0;
  std::string color;
  bool light = false;    // a translucent fill and an outline
  std::string sublabel;  // under the bar; a run of equal ones is one label
  std::string tooltip;   // a <title>, shown on hover
  DataAttributes data;   // on the bar's <rect class="bar">
};

// A whisker over bar `bar` of group `group`, from `low` to `high` (a
// spread).
struct BarRange {
  size_t group = 0;
  size_t bar = 0;
  int64_t low = 0;
  int64_t high = 0;
};

struct BarGroup {
  std::string label;
  std::vector<Bar> bars;
  DataAttributes data;  // on the group's <g class="bar-group">
};

struct GroupedBarChart {
  std::string id;
  std::string title;
  std::string y_title;
  Units y_units = Units::kBytes;
  ChartFrame frame;
  std::vector<BarGroup> groups;
  std::vector<LegendEntry> legend;
  std::vector<BarRange> ranges;
};

std::string RenderGroupedBars(const GroupedBarChart& chart);

}  // namespace memprof
