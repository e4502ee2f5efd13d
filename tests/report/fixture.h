// What the report tests share: the committed run's rank reports
// (tests/data/run-mlp-tiny-ws2) as RankReports and as a RunView, a reader
// of HTML/SVG start tags with their attributes, and the check that a page's
// charts carry every rank's figures.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <exception>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "profiler/base/category.h"
#include "profiler/predict/prediction.h"
#include "profiler/report/rank_report.h"
#include "profiler/report/run_reports.h"
#include "profiler/report/svg_chart.h"

namespace memprof {

inline const char kFixtureDir[] =
    MEMPROF_SOURCE_DIR "/tests/data/run-mlp-tiny-ws2";

// The Content-Security-Policy every report.html carries.
inline const char kCsp[] =
    "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src "
    "'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src "
    "data:\">";

// ---------------------------------------------------------------- markup

struct Element {
  std::string tag;
  std::map<std::string, std::string> attrs;
  bool Has(const std::string& name) const { return attrs.count(name) != 0; }
  std::string Get(const std::string& name) const {
    const auto it = attrs.find(name);
    return it == attrs.end() ? "" : it->second;
  }
  bool HasClass(const std::string& cls) const {
    std::istringstream words(Get("class"));
    for (std::string word; words >> word;) {
      if (word == cls) return true;
    }
    return false;
  }
};

inline std::string Unescape(std::string text) {
  static const std::pair<const char*, const char*> kEntities[] = {
      {"&lt;", "<"},
      {"&gt;", ">"},
      {"&quot;", "\""},
      {"&#39;", "'"},
      {"&amp;", "&"}};
  for (const auto& [entity, ch] : kEntities) {
    for (size_t at = text.find(entity); at != std::string::npos;
         at = text.find(entity, at + 1)) {
      text.replace(at, std::string(entity).size(), ch);
    }
  }
  return text;
}

// The start tags of an HTML document with their attributes, in order
// (script and style contents and comments skipped).
inline std::vector<Element> StartTags(const std::string& html) {
  std::vector<Element> out;
  size_t i = 0;
  const auto name_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' ||
           c == '_' || c == ':';
  };
  while ((i = html.find('<', i)) != std::string::npos) {
    if (html.compare(i, 4, "<!--") == 0) {
      i = html.find("-->", i);
      if (i == std::string::npos) break;
      continue;
    }
    ++i;
    if (i >= html.size() || !std::isalpha(static_cast<unsigned char>(html[i])))
      continue;
    Element e;
    while (i < html.size() && name_char(html[i])) e.tag += html[i++];
    while (i < html.size() && html[i] != '>') {
      if (!name_char(html[i])) {
        ++i;
        continue;
      }
      std::string name;
      while (i < html.size() && name_char(html[i])) name += html[i++];
      std::string value;
      if (i < html.size() && html[i] == '=') {
        const char quote = html[++i];
        if (quote == '"' || quote == '\'') {
          const size_t end = html.find(quote, i + 1);
          value = html.substr(i + 1, end - i - 1);
          i = end + 1;
        } else {
          while (i < html.size() &&
                 !std::isspace(static_cast<unsigned char>(html[i])) &&
                 html[i] != '>')
            value += html[i++];
        }
      }
      e.attrs[name] = Unescape(value);
    }
    if (e.tag == "script" || e.tag == "style") {
      i = html.find("</" + e.tag, i);
      if (i == std::string::npos) i = html.size();
    }
    out.push_back(std::move(e));
  }
  return out;
}

inline std::vector<Element> WithClass(const std::vector<Element>& elements,
                                      const std::string& cls) {
  std::vector<Element> out;
  for (const Element& e : elements) {
    if (e.HasClass(cls)) out.push_back(e);
  }
  return out;
}

// The elements of <svg id="id">...</svg>, the svg first.
inline std::vector<Element> InChart(const std::string& html,
                                    const std::string& id) {
  const size_t at = html.find("id=\"" + id + "\"");
  if (at == std::string::npos) return {};
  const size_t begin = html.rfind('<', at);
  const size_t end = html.find("</svg>", at);
  return StartTags(html.substr(begin, end - begin));
}

inline size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + needle.size())) {
    ++n;
  }
  return n;
}

// ---------------------------------------------------------------- fixture

// The fixture's rank reports, read as `memprof report` reads them; empty
// (and the test failed) when one cannot be read.
inline std::vector<RankReport> FixtureRanks() {
  std::vector<RankReport> ranks;
  for (int r = 0; r < 2; ++r) {
    const std::string path = RankReportPath(kFixtureDir, r);
    try {
      ranks.push_back(ReadRankReport(path));
    } catch (const std::exception& e) {
      ADD_FAILURE() << "fixture unreadable: " << path << ": " << e.what();
      return {};
    }
  }
  return ranks;
}

// The view the renderers read: the ranks, in rank order.
inline RunView ViewOf(std::vector<RankReport> ranks) {
  RunView view;
  view.dir = kFixtureDir;
  view.world_size = static_cast<int>(ranks.size());
  view.ranks = std::move(ranks);
  return view;
}

// The figure of a category that SCHEMA.md names `name` ("predicted_bytes",
// or what ComparedFigure names).
inline int64_t FigureNamed(const CategoryFigures& figures,
                           const std::string& name) {
  if (name == "predicted_bytes") return figures.predicted_bytes;
  if (name == "measured_bytes") return figures.measured_bytes;
  if (name == "peak_bytes") return figures.peak_bytes;
  ADD_FAILURE() << "no category figure named " << name;
  return -1;
}

inline std::set<std::string> NonzeroSeriesCategories(const RankReport& rank) {
  std::set<std::string> out;
  for (Category c : kAllCategories) {
    for (int64_t v : rank.series.bytes[Index(c)]) {
      if (v != 0) out.insert(std::string(CategoryName(c)));
    }
  }
  return out;
}

inline int64_t SeriesMax(const RankReport& rank, Category c) {
  int64_t largest = 0;
  for (int64_t v : rank.series.bytes[Index(c)]) largest = std::max(largest, v);
  return largest;
}

// The ids of the timeline charts that draw rank `rank` (its data-ranks
// lists it): one per x-axis view, in page order (time, then events).
inline std::vector<std::string> TimelineChartsOf(const std::string& html,
                                                 int rank) {
  std::vector<std::string> ids;
  for (const Element& chart : WithClass(StartTags(html), "chart")) {
    std::istringstream words(chart.Get("data-ranks"));
    for (std::string word; words >> word;) {
      if (word == std::to_string(rank)) ids.push_back(chart.Get("id"));
    }
  }
  return ids;
}

// Every bar of the predicted-vs-measured chart carries its rank report's
// figure; every category in a rank's series has its area in both x-axis
// views of the chart that draws the rank, and its legend entry the
// category's live bytes at the rank's peak.
inline void ExpectChartsShowRanks(const std::string& html,
                                  const std::vector<RankReport>& ranks) {
  const std::vector<Element> bars =
      WithClass(InChart(html, "predicted-vs-measured"), "bar");
  const std::string& dtype = ranks.front().context.config.train.dtype;
  EXPECT_EQ(bars.size(), ranks.size() * CategoriesOf(dtype).size() * 2);
  for (const RankReport& rank : ranks) {
    const std::string r = std::to_string(rank.context.rank);
    for (Category c : CategoriesOf(dtype)) {
      const std::string name(CategoryName(c));
      for (const auto& [kind, figure] :
           {std::pair<std::string, std::string>{"predicted", "predicted_bytes"},
            {"measured", ComparedFigure(c)}}) {
        int found = 0;
        for (const Element& bar : bars) {
          if (bar.Get("data-category") != name || bar.Get("data-rank") != r ||
              bar.Get("data-kind") != kind) {
            continue;
          }
          ++found;
          EXPECT_EQ(bar.Get("data-bytes"),
                    std::to_string(FigureNamed(rank.Of(c), figure)))
              << name << " rank " << r << " " << kind;
          EXPECT_EQ(bar.Get("fill"), CategoryColor(c));
        }
        EXPECT_EQ(found, 1) << name << " rank " << r << " " << kind;
      }
    }
    const std::vector<std::string> charts =
        TimelineChartsOf(html, rank.context.rank);
    ASSERT_EQ(charts.size(), 2u) << "rank " << r;
    for (const std::string& id : charts) {
      const std::vector<Element> inside = InChart(html, id);
      std::set<std::string> drawn;
      for (const Element& area : WithClass(inside, "area")) {
        const std::string name = area.Get("data-category");
        drawn.insert(name);
        const std::optional<Category> c = CategoryFromName(name);
        if (!c) {
          ADD_FAILURE() << "area of no category: " << name;
          continue;
        }
        EXPECT_EQ(area.Get("data-max-bytes"),
                  std::to_string(SeriesMax(rank, *c)))
            << name;
        EXPECT_EQ(area.Get("data-points"),
                  std::to_string(rank.series.seq.size()));
        EXPECT_EQ(area.Get("fill"), CategoryColor(*c));
      }
      EXPECT_EQ(drawn, NonzeroSeriesCategories(rank)) << "rank " << r;
      EXPECT_FALSE(drawn.empty());
      std::set<std::string> legend;
      for (const Element& entry : WithClass(inside, "legend-entry")) {
        const std::string name = entry.Get("data-category");
        legend.insert(name);
        const std::optional<Category> c = CategoryFromName(name);
        ASSERT_TRUE(c.has_value()) << name;
        EXPECT_EQ(entry.Get("data-peak-bytes"),
                  std::to_string(rank.peak.breakdown[Index(*c)]))
            << id << " " << name;
      }
      std::set<std::string> possible;
      for (Category c : CategoriesOf(dtype)) {
        possible.insert(std::string(CategoryName(c)));
      }
      EXPECT_EQ(legend, possible) << id;
    }
  }
}

}  // namespace memprof
