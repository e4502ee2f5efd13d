// report.html as markup (profiler/report/report_html.h): a self-contained
// page, the ReportText's context, warnings, tables and redundancy escaped
// and in place, and the charts carrying every rank report's figures (the
// bars' bytes, the areas' series, the phase bands of the timeline).
#include "profiler/report/report_html.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "profiler/base/category.h"
#include "profiler/report/rank_report.h"
#include "profiler/report/report_text.h"
#include "profiler/report/svg_chart.h"
#include "tests/report/fixture.h"

namespace memprof {
namespace {

// A ReportText written by hand: markup to escape, one table, a note.
ReportText HandText() {
  ReportText text;
  text.title = "memprof: mlp-tiny <fixture> & 2 ranks";
  text.context = {{"model", "mlp-tiny"}, {"ranks", "2"}, {"device", "cpu"}};
  ReportTable table;
  table.id = "categories";
  table.title = "Memory by category";
  table.caption = "Largest live bytes over a steady-state step.";
  table.header = {"category", "measured", "predicted"};
  table.numeric = {false, true, true};
  table.rows = {{"weights", "1.00 MiB", "1.00 MiB"},
                {"<script>alert(1)</script>", "0 B", "0 B"}};
  table.notes = {"Figures are per rank."};
  text.tables.push_back(table);
  text.redundancy = {"weights: identical on every rank, 1 copy would do."};
  return text;
}

TEST(ReportHtml, PageIsSelfContained) {
  const std::vector<RankReport> ranks = FixtureRanks();
  ASSERT_EQ(ranks.size(), 2u);
  const std::string html = FormatReportHtml(ViewOf(ranks), HandText());
  EXPECT_EQ(html.find("<meta charset=\"utf-8\">"),
            html.find("<head>") + std::string("<head>\n").size());
  EXPECT_EQ(Count(html, kCsp), 1u);
  for (const char* reference : {"src=", "href=", "url(", "@import", "<link",
                                "<img", "<iframe", "<object", "<embed"}) {
    EXPECT_EQ(html.find(reference), std::string::npos) << reference;
  }
  // The only URL is the SVG namespace, which is never fetched.
  EXPECT_EQ(Count(html, "://"), Count(html, "http://www.w3.org/2000/svg"));
}

TEST(ReportHtml, ShowsTextTablesWarningsAndRedundancy) {
  ReportText text = HandText();
  text.incomplete = {"rank 1: missing (rank-1.json)", "rank 2: not JSON"};
  const std::vector<RankReport> ranks = FixtureRanks();
  ASSERT_EQ(ranks.size(), 2u);
  const std::string html = FormatReportHtml(ViewOf({ranks[0]}), text);
  EXPECT_NE(html.find("<title>memprof: mlp-tiny &lt;fixture&gt; &amp; 2 "
                      "ranks</title>"),
            std::string::npos);
  EXPECT_NE(html.find("<dt>device</dt><dd>cpu</dd>"), std::string::npos);
  const size_t warning = html.find("class=\"warning\"");
  ASSERT_NE(warning, std::string::npos);
  EXPECT_NE(html.find("<p>rank 1: missing (rank-1.json)</p>", warning),
            std::string::npos);
  EXPECT_NE(html.find("<p>rank 2: not JSON</p>", warning), std::string::npos);
  // The table alone scrolls sideways; its heading, caption and note stay
  // put, and wrap at the page's width.
  EXPECT_NE(html.find("<section class=\"report-table\" id=\"categories\">"
                      "\n<h2>Memory by category</h2>\n<p class=\"caption\">"
                      "Largest live bytes over a steady-state step.</p>\n"
                      "<div class=\"scroll-x\">\n<table>\n<thead>"),
            std::string::npos);
  EXPECT_NE(html.find("<tr><td>weights</td><td class=\"num\">1.00 MiB</td>"
                      "<td class=\"num\">1.00 MiB</td></tr>"),
            std::string::npos);
  EXPECT_NE(html.find("<th class=\"num\">measured</th>"), std::string::npos);
  EXPECT_EQ(Count(html, "<script>"), 1u);  // the page's own, not the cell's
  EXPECT_NE(html.find("<td>&lt;script&gt;alert(1)&lt;/script&gt;</td>"),
            std::string::npos);
  EXPECT_NE(html.find("</table>\n</div>\n<p class=\"note\">Figures are per "
                      "rank.</p>"),
            std::string::npos);
  EXPECT_NE(html.find("<li>weights: identical on every rank, 1 copy would "
                      "do.</li>"),
            std::string::npos);
  ExpectChartsShowRanks(html, {ranks[0]});
}

TEST(ReportHtml, ChartsCarryEveryRanksFigures) {
  const std::vector<RankReport> ranks = FixtureRanks();
  ASSERT_EQ(ranks.size(), 2u);
  const std::string html = FormatReportHtml(ViewOf(ranks), HandText());
  ExpectChartsShowRanks(html, ranks);
  const std::vector<Element> tags = StartTags(html);
  for (const RankReport& rank : ranks) {
    const std::string r = std::to_string(rank.context.rank);
    const int step = rank.series.step;
    std::set<std::string> expected, drawn;
    for (const TimelineSegment& segment : rank.timeline) {
      if (segment.step != step) continue;
      expected.insert(std::string(PhaseName(segment.phase)) + " " +
                      std::to_string(segment.begin_seq) + "-" +
                      std::to_string(segment.end_seq));
    }
    const std::vector<std::string> charts =
        TimelineChartsOf(html, std::stoi(r));
    ASSERT_EQ(charts.size(), 2u);
    for (const Element& band : WithClass(InChart(html, charts[1]), "band")) {
      drawn.insert(band.Get("data-phase") + " " + band.Get("data-begin-seq") +
                   "-" + band.Get("data-end-seq"));
    }
    EXPECT_EQ(drawn, expected) << "rank " << r;
    EXPECT_FALSE(expected.empty());
  }
  // The two ranks' timelines are identical: one chart per x-axis view.
  EXPECT_EQ(WithClass(tags, "chart").size(), 2u + 1);
  // Each chart in a sideways-scrolling box of its own.
  for (const Element& chart : WithClass(tags, "chart")) {
    const size_t at =
        html.find("<svg class=\"chart\" id=\"" + chart.Get("id") + "\"");
    ASSERT_NE(at, std::string::npos) << chart.Get("id");
    const std::string box = "<div class=\"scroll-x\">\n";
    EXPECT_EQ(html.compare(at - box.size(), box.size(), box), 0)
        << chart.Get("id");
    EXPECT_EQ(html.compare(html.find("</svg>\n", at) + 7, 7, "</div>\n"), 0)
        << chart.Get("id");
  }
}

TEST(ReportHtml, RankWithoutSeriesGetsANoteInsteadOfAChart) {
  std::vector<RankReport> ranks = FixtureRanks();
  ASSERT_EQ(ranks.size(), 2u);
  ranks[1].series.step = 0;  // no steady-state peak
  const std::string html = FormatReportHtml(ViewOf(ranks), HandText());
  EXPECT_EQ(TimelineChartsOf(html, 0).size(), 2u);
  EXPECT_TRUE(TimelineChartsOf(html, 1).empty());
  EXPECT_NE(html.find("<h3>Rank 1 (vm)</h3>\n<p class=\"explain\">No "
                      "steady-state step was recorded"),
            std::string::npos);
}

// Note [Identical ranks]: the fixture's two ranks have the same timeline
// and share one chart per view, headed "Ranks 0–1"; one byte more in one
// category at one event of rank 1 gives it charts of its own.
TEST(ReportHtml, IdenticalRanksShareOneChart) {
  std::vector<RankReport> ranks = FixtureRanks();
  ASSERT_EQ(ranks.size(), 2u);
  std::string html = FormatReportHtml(ViewOf(ranks), HandText());
  EXPECT_EQ(TimelineChartsOf(html, 0), TimelineChartsOf(html, 1));
  EXPECT_EQ(Count(html, "data-ranks=\"0 1\""), 2u);
  EXPECT_NE(html.find("<h3>Ranks 0\u2013"
                      "1 (vm)</h3>"),
            std::string::npos);
  EXPECT_NE(html.find("<title>Ranks 0\u2013"
                      "1: live bytes by category"),
            std::string::npos);

  ranks[1].series.bytes[Index(Category::kActivations)][7] += 1;
  html = FormatReportHtml(ViewOf(ranks), HandText());
  EXPECT_EQ(Count(html, "data-ranks=\"0\""), 2u);
  EXPECT_EQ(Count(html, "data-ranks=\"1\""), 2u);
  EXPECT_NE(html.find("<h3>Rank 1 (vm)</h3>"), std::string::npos);
}

// The x axis in wall time (Note [Time view]) draws each phase as wide as it
// took: in the fixture's step the optimizer makes more allocation events
// than forward and backward together, but takes less time.
TEST(ReportHtml, TimeViewDrawsPhasesAsWideAsTheyTook) {
  const std::vector<RankReport> ranks = FixtureRanks();
  ASSERT_EQ(ranks.size(), 2u);
  const std::string html = FormatReportHtml(ViewOf(ranks), HandText());
  const std::vector<std::string> charts = TimelineChartsOf(html, 0);
  ASSERT_EQ(charts.size(), 2u);
  // The time view is the one shown first (its radio button is checked).
  EXPECT_NE(html.find("id=\"x-axis-time\" checked"), std::string::npos);
  std::map<std::string, double> time_width, event_width, duration_us;
  for (const Element& band : WithClass(InChart(html, charts[0]), "band")) {
    EXPECT_EQ(InChart(html, charts[0]).front().Get("data-x"), "time");
    time_width[band.Get("data-phase")] = std::stod(band.Get("width"));
    duration_us[band.Get("data-phase")] =
        std::stod(band.Get("data-duration-us"));
  }
  for (const Element& band : WithClass(InChart(html, charts[1]), "band")) {
    event_width[band.Get("data-phase")] = std::stod(band.Get("width"));
  }
  ASSERT_EQ(time_width.size(), 5u);
  double total_us = 0, total_px = 0;
  for (const auto& [phase, us] : duration_us) {
    total_us += us;
    total_px += time_width[phase];
  }
  for (const auto& [phase, us] : duration_us) {
    EXPECT_NEAR(time_width[phase], total_px * us / total_us, 0.2) << phase;
  }
  EXPECT_GT(event_width["optimizer"],
            event_width["forward"] + event_width["backward"]);
  EXPECT_LT(time_width["optimizer"],
            time_width["forward"] + time_width["backward"]);
}

// The legend gives each category's live bytes at the peak, the Peak
// table's figure, and says so.
TEST(ReportHtml, LegendShowsTheBytesAtThePeakAsThePeakTableDoes) {
  const std::vector<RankReport> ranks = FixtureRanks();
  ASSERT_EQ(ranks.size(), 2u);
  const RunView view = ViewOf(ranks);
  const ReportText text = BuildReportText(view);
  const std::string html = FormatReportHtml(view, text);
  const ReportTable* peak = nullptr;
  for (const ReportTable& table : text.tables) {
    if (table.id == "peak") peak = &table;
  }
  ASSERT_NE(peak, nullptr);
  const std::string chart_id = TimelineChartsOf(html, 0).at(0);
  const size_t begin = html.find("id=\"" + chart_id + "\"");
  const std::string svg =
      html.substr(begin, html.find("</svg>", begin) - begin);
  EXPECT_NE(svg.find(">at the peak:</text>"), std::string::npos);
  // The fixture's activations: 4 B live at the peak (the optimizer step),
  // 6.32 KiB at most over the step; the legend must give the table's.
  for (const std::vector<std::string>& row : peak->rows) {
    if (row.front() == "total") continue;
    EXPECT_NE(svg.find(">" + row.front() + " " + row.at(2) + "</text>"),
              std::string::npos)
        << row.front() << " " << row.at(2);
  }
}

TEST(ReportHtml, HeadlineOpensThePage) {
  const std::vector<RankReport> ranks = FixtureRanks();
  ASSERT_EQ(ranks.size(), 2u);
  const RunView view = ViewOf(ranks);
  const ReportText text = BuildReportText(view);
  ASSERT_FALSE(text.headline.empty());
  const std::string html = FormatReportHtml(view, text);
  const size_t headline = html.find("<p class=\"headline\" id=\"headline\">" +
                                    EscapeXml(text.headline) + "</p>");
  ASSERT_NE(headline, std::string::npos);
  EXPECT_LT(html.find("</h1>"), headline);
  EXPECT_LT(headline, html.find("<dl class=\"context\">"));
}

}  // namespace
}  // namespace memprof
