// The SVG charts of report.html (profiler/report/svg_chart.h): ticks on
// nice binary or decimal steps, one colour per category, escaping, bar
// heights in proportion, stacked areas merged to about a pixel, bands and
// markers.
#include "profiler/report/svg_chart.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "profiler/base/category.h"
#include "profiler/base/human_bytes.h"
#include "tests/report/fixture.h"

namespace memprof {
namespace {

// "1.25 MiB" -> 1310720.
int64_t ParseByteLabel(const std::string& label) {
  static const std::vector<std::string> kUnits = {"B",   "KiB", "MiB", "GiB",
                                                  "TiB", "PiB", "EiB"};
  const size_t space = label.find(' ');
  const std::string unit = label.substr(space + 1);
  const auto it = std::find(kUnits.begin(), kUnits.end(), unit);
  if (space == std::string::npos || it == kUnits.end()) return -1;
  const double number = std::stod(label.substr(0, space));
  return std::llround(std::ldexp(number, 10 * (it - kUnits.begin())));
}

TEST(SvgChart, ByteTicksAreExactNiceBinaryMultiplesCoveringTheMax) {
  const std::set<int64_t> multiples = {1, 2, 5, 10, 20, 50, 100, 256, 512};
  for (const int64_t max :
       {int64_t{1}, int64_t{7}, int64_t{1000}, int64_t{1024}, int64_t{1500},
        int64_t{100000}, int64_t{3} << 20, int64_t{483729416}, int64_t{5} << 30,
        (int64_t{1} << 40) + 1}) {
    const std::vector<Tick> ticks = ByteTicks(max);
    ASSERT_GE(ticks.size(), 2u) << max;
    EXPECT_LE(ticks.size(), 7u) << max;
    EXPECT_EQ(ticks.front().value, 0) << max;
    const int64_t step = static_cast<int64_t>(ticks[1].value);
    int64_t unit = 1;
    while (step % (unit * 1024) == 0) unit *= 1024;
    EXPECT_TRUE(multiples.count(step / unit) && step % unit == 0)
        << max << ": step " << step;
    EXPECT_GE(ticks.back().value, static_cast<double>(max));
    EXPECT_LT(ticks[ticks.size() - 2].value, static_cast<double>(max));
    for (size_t i = 0; i < ticks.size(); ++i) {
      EXPECT_EQ(ticks[i].value, static_cast<double>(i * step));
      EXPECT_EQ(ParseByteLabel(ticks[i].label), static_cast<int64_t>(i * step))
          << ticks[i].label;
    }
  }
}

TEST(SvgChart, ByteTickLabelsUseTheLargestBinaryUnit) {
  EXPECT_EQ(ByteTickLabel(0), "0 B");
  EXPECT_EQ(ByteTickLabel(512), "512 B");
  EXPECT_EQ(ByteTickLabel(1024), "1 KiB");
  EXPECT_EQ(ByteTickLabel(768 * 1024), "768 KiB");
  EXPECT_EQ(ByteTickLabel(1280 * 1024), "1.25 MiB");
  EXPECT_EQ(ByteTickLabel(int64_t{5} << 30), "5 GiB");
  const std::vector<Tick> empty = ByteTicks(0);
  ASSERT_EQ(empty.size(), 2u);
  EXPECT_EQ(empty[1].label, "1 B");
}

TEST(SvgChart, NumberTicksAreOneTwoOrFiveTimesAPowerOfTen) {
  const std::vector<Tick> ticks = NumberTicks(12345, 19876);
  ASSERT_GE(ticks.size(), 2u);
  const double step = ticks[1].value - ticks[0].value;
  const double power = std::pow(10, std::floor(std::log10(step)));
  EXPECT_TRUE(step / power == 1 || step / power == 2 || step / power == 5);
  EXPECT_GE(ticks.front().value, 12345);
  EXPECT_LE(ticks.back().value, 19876);
  EXPECT_LE(ticks.size(), 7u);
  EXPECT_LT(ticks.front().value - step, 12345);  // the first multiple
  EXPECT_GT(ticks.back().value + step, 19876);   // and the last
  for (const Tick& tick : ticks) {
    EXPECT_EQ(tick.label, GroupedInteger(std::llround(tick.value)));
  }
  EXPECT_EQ(GroupedInteger(1234567), "1,234,567");
  EXPECT_EQ(GroupedInteger(-1000), "-1,000");
}

StackedAreaChart AllCategoriesArea() {
  StackedAreaChart chart;
  chart.id = "area";
  chart.title = "t";
  chart.x = {100, 101, 102, 103};
  for (Category c : kAllCategories) {
    const int64_t v = (Index(c) + 1) * 1000;
    chart.layers.push_back(
        StackedLayer{std::string(CategoryName(c)),
                     std::string(CategoryColor(c)),
                     {v, v * 2, v, v},
                     {{"data-category", std::string(CategoryName(c))}}});
  }
  return chart;
}

GroupedBarChart AllCategoriesBars() {
  GroupedBarChart chart;
  chart.id = "bars";
  chart.title = "t";
  for (Category c : kAllCategories) {
    const std::string name(CategoryName(c));
    chart.groups.push_back(BarGroup{name,
                                    {Bar{(Index(c) + 1) * 4096,
                                         std::string(CategoryColor(c)),
                                         false,
                                         "r0",
                                         "",
                                         {{"data-category", name}}}},
                                    {}});
  }
  return chart;
}

TEST(SvgChart, EachCategoryHasOneDistinctColourInEveryChart) {
  std::set<std::string> colours;
  const std::regex hex("#[0-9a-f]{6}");
  for (Category c : kAllCategories) {
    const std::string colour(CategoryColor(c));
    EXPECT_TRUE(std::regex_match(colour, hex)) << colour;
    colours.insert(colour);
  }
  EXPECT_EQ(colours.size(), static_cast<size_t>(kNumCategories));
  for (const std::string& svg : {RenderStackedArea(AllCategoriesArea()),
                                 RenderGroupedBars(AllCategoriesBars())}) {
    std::set<std::string> seen;
    for (const Element& e : StartTags(svg)) {
      if (!e.HasClass("area") && !e.HasClass("bar")) continue;
      const std::string name = e.Get("data-category");
      EXPECT_EQ(e.Get("fill"), CategoryColor(*CategoryFromName(name)));
      seen.insert(name);
    }
    EXPECT_EQ(seen.size(), static_cast<size_t>(kNumCategories));
  }
}

TEST(SvgChart, EscapesTextAndAttributes) {
  EXPECT_EQ(EscapeXml("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
  EXPECT_EQ(EscapeXml(std::string("a\x01"
                                  "b\n",
                                  4)),
            "a\xEF\xBF\xBD"
            "b\n");
  StackedAreaChart chart = AllCategoriesArea();
  chart.title = "<script>alert('x')</script>";
  chart.layers[0].label = "a<b & \"c\"";
  chart.layers[0].data.emplace_back("data-note", "\"><img src=x>");
  const std::string svg = RenderStackedArea(chart);
  EXPECT_EQ(svg.find("<script>"), std::string::npos);
  EXPECT_EQ(svg.find("<img"), std::string::npos);
  EXPECT_NE(svg.find("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"),
            std::string::npos);
  EXPECT_NE(svg.find("a&lt;b &amp; &quot;c&quot;"), std::string::npos);
  bool found = false;
  for (const Element& e : WithClass(StartTags(svg), "area")) {
    if (e.Has("data-note")) {
      EXPECT_EQ(e.Get("data-note"), "\"><img src=x>");
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

// "y" attribute and "height" of a rect, as numbers.
double NumAttr(const Element& e, const std::string& name) {
  return std::stod(e.Get(name));
}

TEST(SvgChart, BarCarriesItsBytesAndAHeightInProportion) {
  GroupedBarChart chart;
  chart.id = "bars";
  const int64_t big = 483729416;
  const int64_t small = 120932354;
  chart.groups.push_back(
      BarGroup{"activations",
               {Bar{big,
                    "#e15759",
                    false,
                    "r0",
                    "",
                    {{"data-bytes", std::to_string(big)}}},
                Bar{small,
                    "#e15759",
                    true,
                    "r0",
                    "",
                    {{"data-bytes", std::to_string(small)}}}},
               {}});
  const std::vector<Element> bars =
      WithClass(StartTags(RenderGroupedBars(chart)), "bar");
  ASSERT_EQ(bars.size(), 2u);
  EXPECT_EQ(bars[0].Get("data-bytes"), "483729416");
  EXPECT_EQ(bars[1].Get("data-bytes"), "120932354");
  EXPECT_EQ(bars[1].Get("fill-opacity"), "0.3");  // light: predicted
  const double ratio = NumAttr(bars[0], "height") / NumAttr(bars[1], "height");
  EXPECT_NEAR(ratio, static_cast<double>(big) / small, 0.01);
  // The y axis reaches the tallest bar: its top lies inside the plot.
  const std::vector<Tick> ticks = ByteTicks(big);
  const double plot = chart.frame.PlotBottom() - chart.frame.PlotTop();
  EXPECT_NEAR(NumAttr(bars[0], "height"), plot * big / ticks.back().value, 0.2);
}

// The y coordinates of a path's "V" commands.
std::vector<double> VerticalStops(const std::string& d) {
  std::vector<double> out;
  for (size_t at = d.find('V'); at != std::string::npos;
       at = d.find('V', at + 1)) {
    out.push_back(std::stod(d.substr(at + 1)));
  }
  return out;
}

TEST(SvgChart, StackedAreaMergesSubPixelPointsKeepingTheLargestTotal) {
  StackedAreaChart chart;
  chart.id = "area";
  std::vector<int64_t> weights, spikes;
  for (int64_t i = 0; i < 20000; ++i) {
    chart.x.push_back(i);
    weights.push_back(1 << 20);
    spikes.push_back(i == 12345 ? int64_t{3} << 20 : 0);
  }
  chart.layers = {StackedLayer{"weights", "#4e79a7", weights, {}},
                  StackedLayer{"temporaries", "#76b7b2", spikes, {}},
                  StackedLayer{"inputs",
                               "#edc948",
                               std::vector<int64_t>(20000, 0),
                               {{"data-category", "inputs"}}}};
  const std::string svg = RenderStackedArea(chart);
  const std::vector<Element> areas = WithClass(StartTags(svg), "area");
  ASSERT_EQ(areas.size(), 2u);  // inputs is zero throughout: no area
  const std::vector<double> stops = VerticalStops(areas[1].Get("d"));
  const double plot_width = chart.frame.PlotRight() - chart.frame.PlotLeft();
  EXPECT_LE(stops.size(), 2 * plot_width + 4);  // merged to about a pixel
  const std::vector<Tick> ticks = ByteTicks(int64_t{4} << 20);
  const double spike_y = chart.frame.PlotBottom() -
                         (chart.frame.PlotBottom() - chart.frame.PlotTop()) *
                             (4 << 20) / ticks.back().value;
  EXPECT_NEAR(*std::min_element(stops.begin(), stops.end()), spike_y, 0.1);
  // The empty layer still has its legend entry.
  int legend = 0;
  for (const Element& e : WithClass(StartTags(svg), "legend-entry")) {
    legend += e.Get("data-category") == "inputs";
  }
  EXPECT_EQ(legend, 1);
}

TEST(SvgChart, BandsAndMarkersCarryTheirRange) {
  StackedAreaChart chart = AllCategoriesArea();
  chart.bands = {
      Band{100, 102, "forward", "#e6eef8", {{"data-phase", "forward"}}},
      Band{102, 104, "backward", "#fcebdc", {{"data-phase", "backward"}}}};
  chart.markers = {Marker{101, "peak", {{"data-seq", "101"}}}};
  const std::vector<Element> tags = StartTags(RenderStackedArea(chart));
  const std::vector<Element> bands = WithClass(tags, "band");
  ASSERT_EQ(bands.size(), 2u);
  EXPECT_EQ(bands[0].Get("data-phase"), "forward");
  EXPECT_NEAR(NumAttr(bands[0], "width"), NumAttr(bands[1], "width"), 0.11);
  EXPECT_NEAR(NumAttr(bands[0], "x") + NumAttr(bands[0], "width"),
              NumAttr(bands[1], "x"), 0.11);
  const std::vector<Element> markers = WithClass(tags, "marker");
  ASSERT_EQ(markers.size(), 1u);
  EXPECT_NEAR(NumAttr(markers[0], "x1"),
              NumAttr(bands[0], "x") + NumAttr(bands[0], "width") / 2, 0.11);
}

// A band label over a narrow band at either edge of the plot (zero_grad,
// the step's last phase) is moved inside the drawing, not cut by its edge:
// each label's estimated extent (7 px a character) lies within the SVG.
TEST(SvgChart, BandLabelsStayInsideTheDrawing) {
  StackedAreaChart chart = AllCategoriesArea();
  const double lo = static_cast<double>(chart.x.front());
  const double hi = static_cast<double>(chart.x.back()) + 1;
  chart.bands = {Band{lo, lo + 0.01, "inputs", "#fbf5d9", {}},
                 Band{hi - 0.01, hi, "zero_grad", "#ececec", {}}};
  const std::string svg = RenderStackedArea(chart);
  const std::regex label(
      "<text class=\"band-label\" x=\"([0-9.]+)\" y=\"[0-9.]+\" "
      "text-anchor=\"middle\">([^<]+)</text>");
  int found = 0;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), label);
       it != std::sregex_iterator(); ++it) {
    ++found;
    const double center = std::stod((*it)[1]);
    const double half = 7.0 * (*it)[2].str().size() / 2;
    EXPECT_GE(center - half, 0) << (*it)[2];
    EXPECT_LE(center + half, chart.frame.width) << (*it)[2];
  }
  EXPECT_EQ(found, 2);
}

// The legend gives legend_values when there are, under its title.
TEST(SvgChart, LegendShowsItsTitleAndGivenValues) {
  StackedAreaChart chart = AllCategoriesArea();
  chart.legend_title = "at the peak:";
  for (size_t i = 0; i < chart.layers.size(); ++i) {
    chart.legend_values.push_back(static_cast<int64_t>(i) * 1024);
  }
  const std::string svg = RenderStackedArea(chart);
  EXPECT_NE(svg.find(">at the peak:</text>"), std::string::npos);
  for (size_t i = 0; i < chart.layers.size(); ++i) {
    EXPECT_NE(svg.find(">" + chart.layers[i].label + " " +
                       HumanBytes(static_cast<int64_t>(i) * 1024) + "</text>"),
              std::string::npos)
        << chart.layers[i].label;
  }
}

// Microseconds are ticked and labelled in milliseconds.
TEST(SvgChart, MicrosecondTicksAreLabelledInMilliseconds) {
  const std::vector<Tick> ticks = ValueTicks(Units::kMicroseconds, 15000);
  ASSERT_GE(ticks.size(), 2u);
  EXPECT_EQ(ticks.back().value, 15000);
  EXPECT_EQ(ticks.back().label, "15");
  EXPECT_EQ(ticks[1].value, 5000);
  EXPECT_EQ(ticks[1].label, "5");
  const std::vector<Tick> small = ValueTicks(Units::kMicroseconds, 1250);
  EXPECT_GE(small.back().value, 1250);
  EXPECT_EQ(small[1].label, "0.5");
}

}  // namespace
}  // namespace memprof
