// sweep.html and the sweep table from a sweep.json document (profiler/
// report/sweep_page.h): step times in ms with the spread of the steady
// steps, the warning for a spread over the threshold (Note [Step-time
// spread]) above everything, captions that wrap, charts that scroll alone.
#include "profiler/report/sweep_page.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "profiler/base/category.h"
#include "tests/report/fixture.h"

namespace memprof {
namespace {

using Json = nlohmann::ordered_json;

Json Row(int64_t n, double step_s, double min_s, double max_s) {
  Json bytes = Json::object();
  for (Category c : kAllCategories) bytes[std::string(CategoryName(c))] = 1024;
  return Json{{"world_size", n},
              {"zero_stage", 0},
              {"micro_batch", 8 / n},
              {"bytes", bytes},
              {"peak_bytes", 9216},
              {"step_seconds", step_s},
              {"steady_steps", 4},
              {"step_seconds_min", min_s},
              {"step_seconds_max", max_s},
              {"step_spread", (max_s - min_s) / step_s},
              {"comm_seconds", 0.001},
              {"exchange_seconds", 0.0},
              {"comm_share", 0.001 / step_s},
              {"run", "out/ws-" + std::to_string(n)}};
}

// N=1 steady (5% spread), N=2 not (40%), with the warning SweepJson writes.
Json TwoPoints() {
  return Json{{"schema", "memprof.sweep/1.2"},
              {"global_batch", 8},
              {"rows", Json::array({Row(1, 0.0100, 0.0098, 0.0103),
                                    Row(2, 0.0125, 0.0100, 0.0150)})},
              {"warnings", Json::array({"N=2's steady-state steps took 10.00 "
                                        "to 15.00 ms (a spread of 40% of "
                                        "their median, over 25%)"})},
              {"failed", nullptr}};
}

TEST(SweepPage, StepTimesAreInMillisecondsWithTheSteadyStepsSpread) {
  const std::string html = SweepHtml("memprof sweep: mlp", TwoPoints());
  const std::vector<Element> chart = InChart(html, "sweep-step-time");
  ASSERT_FALSE(chart.empty());
  EXPECT_NE(html.find(">time (ms)</text>"), std::string::npos);
  EXPECT_EQ(html.find("microseconds"), std::string::npos);
  // 15 ms at most: ticks 0, 5, 10, 15 (ms), not 15,000 (us).
  EXPECT_NE(html.find(">15</text>"), std::string::npos);
  EXPECT_EQ(html.find(">15,000</text>"), std::string::npos);
  std::vector<Element> steps;
  for (const Element& bar : WithClass(chart, "bar")) {
    if (bar.Get("data-kind") == "step") steps.push_back(bar);
  }
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[1].Get("data-us"), "12500");
  EXPECT_EQ(steps[1].Get("data-min-us"), "10000");
  EXPECT_EQ(steps[1].Get("data-max-us"), "15000");
  EXPECT_EQ(WithClass(chart, "whisker").size(), 2u);
  EXPECT_NE(html.find("<title>median step: 12.50 ms (shortest 10.00 ms, "
                      "longest 15.00 ms)</title>"),
            std::string::npos);
}

TEST(SweepPage, AnUnreliableSpreadIsWarnedAboveEverythingWithItsThreshold) {
  const Json sweep = TwoPoints();
  const std::string html = SweepHtml("memprof sweep: mlp", sweep);
  const size_t warning =
      html.find("<div class=\"warning\" id=\"unreliable\" role=\"alert\">");
  ASSERT_NE(warning, std::string::npos);
  EXPECT_LT(warning, html.find("id=\"sweep-charts\""));
  EXPECT_NE(
      html.find("N=2&#39;s steady-state steps took 10.00 to 15.00 ms", warning),
      std::string::npos);
  const std::string threshold =
      "flagged as not comparable when its steady-state steps spread over "
      "more than 25% of their median";
  EXPECT_NE(html.find(threshold), std::string::npos);
  // The page shows the warning once; sweep.md's table ends with it.
  EXPECT_EQ(Count(html, "took 10.00 to 15.00 ms"), 1u);
  const ReportTable md = SweepTable(sweep, /*warnings_as_notes=*/true);
  EXPECT_EQ(md.notes.back(),
            "Warning: " + sweep["warnings"][0].get<std::string>());

  Json steady = sweep;
  steady["warnings"] = Json::array();
  const std::string quiet = SweepHtml("memprof sweep: mlp", steady);
  EXPECT_EQ(quiet.find("id=\"unreliable\""), std::string::npos);
  EXPECT_NE(quiet.find(threshold), std::string::npos);
}

TEST(SweepPage, CaptionWrapsOutsideTheScrollingTableAndChartsScrollAlone) {
  const std::string html = SweepHtml("memprof sweep: mlp", TwoPoints());
  EXPECT_NE(
      html.find("<p class=\"caption\">Global batch 8 per optimizer step; "),
      std::string::npos);
  EXPECT_EQ(html.find("<caption>"), std::string::npos);
  for (const char* id : {"sweep-bytes", "sweep-step-time"}) {
    EXPECT_NE(html.find(std::string("<div class=\"scroll-x\">\n<svg "
                                    "class=\"chart\" id=\"") +
                        id + "\""),
              std::string::npos)
        << id;
  }
}

}  // namespace
}  // namespace memprof
