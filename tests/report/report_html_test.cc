// report.html as markup (profiler/report/report_html.h): a self-contained
// page, the ReportText's context, warnings, tables and redundancy escaped
// and in place, and the charts carrying every rank report's figures (the
// bars' bytes, the areas' series, the phase bands of the timeline).
#include "profiler/report/report_html.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "profiler/base/category.h"
#include "profiler/report/rank_report.h"
#include "profiler/report/report_text.h"
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
  // The table alone scrolls sideways; its heading and note stay put.
  EXPECT_NE(html.find("<section class=\"report-table\" id=\"categories\">"
                      "\n<h2>Memory by category</h2>\n<div class=\"scroll-x\">"
                      "\n<table>\n<caption>Largest live bytes over a "
                      "steady-state step.</caption>"),
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
    for (const Element& band :
         WithClass(InChart(html, "live-bytes-rank-" + r), "band")) {
      drawn.insert(band.Get("data-phase") + " " + band.Get("data-begin-seq") +
                   "-" + band.Get("data-end-seq"));
    }
    EXPECT_EQ(drawn, expected) << "rank " << r;
    EXPECT_FALSE(expected.empty());
  }
  EXPECT_EQ(WithClass(tags, "chart").size(), ranks.size() + 1);
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
  EXPECT_NE(html.find("id=\"live-bytes-rank-0\""), std::string::npos);
  EXPECT_EQ(html.find("id=\"live-bytes-rank-1\""), std::string::npos);
  EXPECT_NE(html.find("No steady-state step was recorded"), std::string::npos);
}

}  // namespace
}  // namespace memprof
