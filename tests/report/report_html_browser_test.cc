// report.html in a real headless Chromium: its layout (the page's script
// measures every chart), its layout in a 400 px and a 1600 px wide window
// (labels legible and inside their charts, no sentence past the window,
// numbers on one line; the headline whole, every legend figure the Peak
// table's, the x-axis buttons switching views), a screenshot, the DOM with
// the fixture's figures, and a network log showing it requested nothing
// (and that the log would show a request, and that the page's CSP blocks
// one).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iostream>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiler/report/rank_report.h"
#include "profiler/report/report_html.h"
#include "profiler/report/report_text.h"
#include "profiler/report/run_reports.h"
#include "profiler/report/svg_chart.h"
#include "tests/report/fixture.h"
#include "tests/temp_dir.h"
#include "tests/text_file.h"

namespace memprof {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

const char kShotCopy[] = "/tmp/report-html-shot.png";

// The smallest rendered height of a chart label (a <text> element's box,
// CSS px) that the report accepts at any window width: an 11 px label
// measures 13 px at the SVG's own size.
constexpr double kMinLabelHeightPx = 9.0;

// The fixture's page: one timeline chart for its two identical ranks in two
// x-axis views, of which one is shown, and the predicted-vs-measured chart.
constexpr size_t kCharts = 3;
constexpr size_t kChartsShown = 2;

// ---------------------------------------------------------------- chromium

std::string ChromiumPath() {
  const char* custom = std::getenv("MEMPROF_CHROMIUM");
  return custom != nullptr && *custom != '\0' ? custom : "/usr/bin/chromium";
}

std::string Quote(const std::string& text) {
  std::string out = "'";
  for (char c : text)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// What one headless Chromium run left behind.
struct BrowserRun {
  int exit_code = -1;  // 124: killed by the timeout
  std::string stdout_text;
  std::string stderr_text;
};

// Runs Chromium headless on file://page with its own fresh profile,
// killed after 60 seconds.
BrowserRun RunChromium(const fs::path& work, const fs::path& page,
                       const std::string& flags) {
  static int run = 0;
  const std::string name = "run-" + std::to_string(++run);
  const fs::path profile = work / (name + "-profile");
  const fs::path out = work / (name + ".out");
  const fs::path err = work / (name + ".err");
  const std::string command =
      "timeout 60 " + Quote(ChromiumPath()) +
      " --headless --no-sandbox --disable-gpu --no-first-run"
      " --disable-background-networking --disable-component-update"
      " --disable-sync --hide-scrollbars --user-data-dir=" +
      Quote(profile.string()) + " " + flags + " " +
      Quote("file://" + page.string()) + " >" + Quote(out.string()) + " 2>" +
      Quote(err.string());
  const int status = std::system(command.c_str());
  BrowserRun result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.stdout_text = ReadFile(out);
  result.stderr_text = ReadFile(err);
  return result;
}

std::string Describe(const BrowserRun& run) {
  return "chromium exited " + std::to_string(run.exit_code) +
         (run.exit_code == 124 ? " (timed out after 60 s)" : "") +
         "; stderr tail:\n" +
         run.stderr_text.substr(
             run.stderr_text.size() > 2000 ? run.stderr_text.size() - 2000 : 0);
}

// ---------------------------------------------------------------- netlog

// A Chromium --log-net-log file, read for the URLs requested. A file://
// page's own load never reaches the network stack, so it is not in the
// log; what is: the browser's own background requests (update checks,
// account lookups: initiator "not an origin", no file:// in their keys)
// and everything done for the page: requests, DNS lookups, preconnects,
// all keyed by the page's file:// site (network isolation and anonymization
// keys, site_for_cookies), and navigations it starts (an initiator origin).
struct NetLogRequests {
  size_t events = 0;
  std::set<std::string> for_page;  // not data:, about:, chrome: or blob:
  std::set<std::string> browser;
};

bool MentionsString(const Json& value, const std::string& needle) {
  if (value.is_string()) {
    return value.get<std::string>().find(needle) != std::string::npos;
  }
  if (value.is_structured()) {
    for (const Json& item : value) {
      if (MentionsString(item, needle)) return true;
    }
  }
  return false;
}

bool BrowserInternal(const std::string& url) {
  for (const char* scheme :
       {"data:", "about:", "chrome:", "chrome-untrusted:", "blob:"}) {
    if (url.rfind(scheme, 0) == 0) return true;
  }
  return false;
}

NetLogRequests ReadNetLog(const fs::path& path, const std::string& page_url) {
  const Json log = Json::parse(ReadFile(path));  // throws when truncated
  const int start_job =
      log.at("constants").at("logEventTypes").at("URL_REQUEST_START_JOB");
  NetLogRequests found;
  for (const Json& event : log.at("events")) {
    ++found.events;
    const auto params = event.find("params");
    if (params == event.end() || !params->is_object()) continue;
    std::string target;
    for (const char* key : {"url", "host"}) {
      const auto it = params->find(key);
      if (it != params->end() && it->is_string()) {
        target = it->get<std::string>();
        break;
      }
    }
    if (target.empty()) continue;
    const bool start = event.value("type", -1) == start_job;
    const std::string initiator = params->value("initiator", "");
    const bool for_page =
        MentionsString(*params, "file://") ||
        (start && !initiator.empty() && initiator != "not an origin");
    if (for_page) {
      if (!BrowserInternal(target) && target != page_url) {
        found.for_page.insert(target);
      }
    } else if (start) {
      found.browser.insert(target);
    }
  }
  return found;
}

std::string Join(const std::set<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += "\n  " + item;
  return out;
}

// ---------------------------------------------------------------- layout

// The layout of the page in an iframe `width` CSS px wide: Chromium's
// headless window is at least 500 px wide (--window-size=400 gives a
// 500 px viewport), so the page is loaded through srcdoc into an iframe of
// the width under test, which is the page's window (the probe reports its
// innerWidth). The wrapper's script, not the page's, measures once the
// frame has loaded and writes JSON into <pre id="layout">:
//   viewport_width, page_width: the frame's innerWidth and the page's
//     scrollWidth (wider: the whole page scrolls sideways);
//   labels: per chart, its label count and its smallest label (text,
//     rendered height in px);
//   boxes: every table and chart: width, the width of the box it sits in,
//     whether that box scrolls sideways (overflow-x auto or scroll), the px
//     of it still hidden on the right with the scroller scrolled to its end
//     (0: the whole box is reachable), and what else scrolls with it (the
//     scroller's other children: a heading or note that would scroll out
//     of view);
//   number_cells, wrapped: how many td.num/th.num cells there are, and
//     those whose text takes more than one line;
//   clipped: every chart label not wholly inside its chart's drawing (an
//     SVG cuts what sticks out), with the px cut off;
//   prose: how many sentences and headings (h1-h3, p, caption, li, dt, dd,
//     label) there are, and those reaching past the window's right edge (cut
//     off by a box that scrolls, or by the window);
//   headline: the headline's text and its box's right edge;
//   legend: per timeline chart shown, its legend entries' text compared
//     with "CATEGORY FIGURE" from the Peak table's column of each rank the
//     chart draws: how many were compared, and those that differ;
//   views: the timeline charts shown per x-axis view ("time", "events")
//     before and after a click on "allocation events".
// Labels, clipping and the legend are measured for every chart shown in
// either view.
constexpr const char* kLayoutProbe = R"(
document.getElementById("page").addEventListener("load", function () {
  var doc = this.contentDocument, win = this.contentWindow;
  var out = {viewport_width: win.innerWidth,
             page_width: doc.documentElement.scrollWidth,
             labels: [], boxes: [], number_cells: 0, wrapped: [],
             clipped: [], prose: 0, prose_cut: [], headline: null,
             legend: {compared: 0, differ: []}, views: {}};
  var measured = {};
  function Shown(element) { return element.getClientRects().length > 0; }
  function PeakCell(category, rank) {
    var table = doc.querySelector("#peak table");
    if (!table) return null;
    var column = -1;
    table.querySelectorAll("thead th").forEach(function (th, i) {
      if (th.textContent === "rank " + rank) column = i;
    });
    var found = null;
    table.querySelectorAll("tbody tr").forEach(function (tr) {
      if (tr.cells[0].textContent === category && column >= 0) {
        found = tr.cells[column].textContent;
      }
    });
    return found;
  }
  function MeasureCharts() {
    doc.querySelectorAll("svg.chart").forEach(function (chart) {
      if (!Shown(chart) || measured[chart.id]) return;
      measured[chart.id] = true;
      var texts = chart.querySelectorAll("text");
      var box = chart.getBoundingClientRect();
      var smallest = null;
      texts.forEach(function (t) {
        var r = t.getBoundingClientRect();
        if (smallest === null || r.height < smallest.height) {
          smallest = {text: t.textContent, height: r.height};
        }
        var cut = Math.max(box.left - r.left, r.right - box.right,
                           box.top - r.top, r.bottom - box.bottom);
        if (cut > 0.5) {
          out.clipped.push({chart: chart.id, text: t.textContent, px: cut});
        }
      });
      out.labels.push({chart: chart.id, count: texts.length,
                       smallest: smallest});
      var ranks = chart.getAttribute("data-ranks");
      if (!ranks) return;
      chart.querySelectorAll(".legend-entry").forEach(function (entry) {
        var shown = entry.querySelector("text").textContent;
        ranks.split(" ").forEach(function (rank) {
          var want = entry.getAttribute("data-category") + " " +
                     PeakCell(entry.getAttribute("data-category"), rank);
          ++out.legend.compared;
          if (shown !== want) {
            out.legend.differ.push({chart: chart.id, rank: rank,
                                    legend: shown, table: want});
          }
        });
      });
    });
  }
  function Views(when) {
    var views = {time: 0, events: 0};
    doc.querySelectorAll("svg.chart[data-x]").forEach(function (chart) {
      if (Shown(chart)) ++views[chart.getAttribute("data-x")];
    });
    out.views[when] = views;
  }
  doc.querySelectorAll("h1, h2, h3, p, caption, li, dt, dd, label").forEach(
      function (element) {
    if (!Shown(element)) return;
    ++out.prose;
    var r = element.getBoundingClientRect();
    if (r.right > win.innerWidth + 0.5 || r.left < -0.5) {
      out.prose_cut.push({text: element.textContent.slice(0, 80),
                          right: r.right});
    }
  });
  var headline = doc.getElementById("headline");
  if (headline) {
    out.headline = {text: headline.textContent,
                    right: headline.getBoundingClientRect().right};
  }
  MeasureCharts();
  Views("before");
  var events = doc.getElementById("x-axis-events");
  if (events) events.click();
  MeasureCharts();
  Views("after");
  if (events) doc.getElementById("x-axis-time").click();
  function Scroller(box) {
    for (var p = box.parentElement; p && p !== doc.body; p = p.parentElement) {
      var overflow = win.getComputedStyle(p).overflowX;
      if (overflow === "auto" || overflow === "scroll") return p;
    }
    return null;
  }
  doc.querySelectorAll("table, svg.chart").forEach(function (box) {
    var scroller = Scroller(box);
    var container = scroller || box.parentElement;
    var section = box.closest("section");
    var entry = {kind: box.tagName.toLowerCase(),
                 id: box.id || (section ? section.id : ""),
                 width: box.getBoundingClientRect().width,
                 container_width: container.clientWidth,
                 scrolls: scroller !== null, hidden_right: 0, with: []};
    if (scroller) {
      scroller.scrollLeft = scroller.scrollWidth;
      var inner = scroller.getBoundingClientRect().left + scroller.clientLeft +
                  scroller.clientWidth;
      entry.hidden_right = Math.max(0, box.getBoundingClientRect().right - inner);
      scroller.scrollLeft = 0;
      for (var i = 0; i < scroller.children.length; ++i) {
        var child = scroller.children[i];
        if (child !== box && !child.contains(box)) {
          entry.with.push(child.tagName.toLowerCase());
        }
      }
    }
    out.boxes.push(entry);
  });
  doc.querySelectorAll("td.num, th.num").forEach(function (cell) {
    ++out.number_cells;
    var range = doc.createRange();
    range.selectNodeContents(cell);
    var tops = {};
    var rects = range.getClientRects();
    for (var i = 0; i < rects.length; ++i) tops[Math.round(rects[i].top)] = 1;
    var lines = Object.keys(tops).length;
    if (lines > 1) out.wrapped.push({text: cell.textContent, lines: lines});
  });
  var pre = document.createElement("pre");
  pre.id = "layout";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
)";

// ---------------------------------------------------------------- PNG

struct PngSize {
  bool valid = false;
  uint32_t width = 0;
  uint32_t height = 0;
};

PngSize ReadPngSize(const std::string& bytes) {
  static const char kSignature[] = "\x89PNG\r\n\x1a\n";
  PngSize size;
  if (bytes.size() < 24 || bytes.compare(0, 8, kSignature, 8) != 0 ||
      bytes.compare(12, 4, "IHDR") != 0) {
    return size;
  }
  const auto be32 = [&](size_t at) {
    uint32_t v = 0;
    for (size_t i = 0; i < 4; ++i) {
      v = v << 8 | static_cast<unsigned char>(bytes[at + i]);
    }
    return v;
  };
  size.valid = true;
  size.width = be32(16);
  size.height = be32(20);
  return size;
}

class ReportHtmlBrowser : public TempDirTest {
 protected:
  void SetUp() override {
    ASSERT_EQ(access(ChromiumPath().c_str(), X_OK), 0)
        << "no Chromium at " << ChromiumPath()
        << ": the report.html test renders the page in a real headless "
           "browser. Run scripts/deps.sh (it installs Debian's chromium), or "
           "apt-get install chromium.";
    ranks_ = FixtureRanks();
    ASSERT_EQ(ranks_.size(), 2u);
    // The page exactly as a profile writes it for the fixture's run.
    const RunView view = LoadRunView(kFixtureDir);
    const ReportText text = BuildReportText(view);
    headline_ = text.headline;
    ASSERT_FALSE(headline_.empty());
    html_ = FormatReportHtml(view, text);
    page_ = dir_ / "report.html";
    WriteFile(page_, html_);
  }
  void TearDown() override {
    if (HasFailure()) temp_dir_.Keep();  // the page, shots and net logs
  }

  // `markup` written to the temporary directory as `name`.
  fs::path Variant(const std::string& name, std::string markup) {
    const fs::path path = dir_ / name;
    WriteFile(path, markup);
    return path;
  }

  std::string WithoutCsp() {
    std::string markup = html_;
    const size_t at = markup.find(kCsp);
    if (at != std::string::npos) markup.erase(at, std::string(kCsp).size());
    return markup;
  }

  static std::string WithExternalImage(std::string markup) {
    markup.insert(markup.find("</main>"),
                  "<img src=\"http://example.invalid/x.png\" alt=\"\">\n");
    return markup;
  }

  NetLogRequests LoadWithNetLog(const fs::path& page, std::string* dom) {
    const fs::path netlog = dir_ / (page.stem().string() + ".netlog.json");
    const BrowserRun run = RunChromium(
        dir_, page,
        "--window-size=1200,3000 --virtual-time-budget=2000 --log-net-log=" +
            Quote(netlog.string()) + " --dump-dom");
    EXPECT_EQ(run.exit_code, 0) << Describe(run);
    *dom = run.stdout_text;
    try {
      return ReadNetLog(netlog, "file://" + page.string());
    } catch (const std::exception& e) {
      ADD_FAILURE() << "netlog " << netlog << " unreadable: " << e.what();
      return {};
    }
  }

  // The page's layout at `width` CSS px (kLayoutProbe); null when the
  // probe wrote nothing (and the test failed).
  Json MeasureLayout(int width) {
    const std::string wrapper =
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"></head>"
        "<body style=\"margin: 0\">\n<iframe id=\"page\" style=\"display: "
        "block; border: 0; width: " +
        std::to_string(width) + "px; height: 3000px\" srcdoc=\"" +
        EscapeXml(html_) + "\"></iframe>\n<script>" + kLayoutProbe +
        "</script>\n</body></html>\n";
    const fs::path page =
        Variant("layout-" + std::to_string(width) + ".html", wrapper);
    const BrowserRun run =
        RunChromium(dir_, page,
                    "--window-size=" + std::to_string(std::max(width, 500)) +
                        ",3000 --virtual-time-budget=2000 --dump-dom");
    EXPECT_EQ(run.exit_code, 0) << Describe(run);
    const std::string& dom = run.stdout_text;
    const std::string open = "<pre id=\"layout\">";
    const size_t begin = dom.find(open);
    const size_t end = dom.find("</pre>", begin);
    if (begin == std::string::npos || end == std::string::npos) {
      ADD_FAILURE() << "the layout probe wrote nothing at " << width << " px:\n"
                    << dom.substr(0, 500);
      return nullptr;
    }
    const size_t from = begin + open.size();
    return Json::parse(Unescape(dom.substr(from, end - from)));
  }

  fs::path page_;
  std::string html_;
  std::string headline_;
  std::vector<RankReport> ranks_;
};

TEST_F(ReportHtmlBrowser, LaysOutEveryChartWithTheFixtureFigures) {
  const BrowserRun run =
      RunChromium(dir_, page_,
                  "--window-size=1200,3000 --virtual-time-budget=2000 "
                  "--dump-dom");
  ASSERT_EQ(run.exit_code, 0) << Describe(run);
  const std::string& dom = run.stdout_text;
  ASSERT_NE(dom.find("</html>"), std::string::npos) << dom.substr(0, 500);
  const std::vector<Element> tags = StartTags(dom);
  const std::vector<Element> charts = WithClass(tags, "chart");
  // The fixture's two identical ranks share one timeline chart, drawn in
  // two x-axis views (wall time shown, allocation events hidden), and the
  // predicted-vs-measured chart.
  ASSERT_EQ(charts.size(), kCharts);
  for (const Element& chart : charts) {
    if (chart.Get("data-x") == "events") {
      EXPECT_FALSE(chart.Has("data-rendered-width")) << "the hidden view";
      continue;
    }
    EXPECT_GE(std::stoi(chart.Get("data-rendered-width")), 800)
        << chart.Get("id");
    EXPECT_GE(std::stoi(chart.Get("data-rendered-height")), 300)
        << chart.Get("id");
    const std::vector<Element> inside = InChart(dom, chart.Get("id"));
    const size_t data =
        WithClass(inside, "area").size() + WithClass(inside, "bar").size();
    EXPECT_EQ(chart.Get("data-rendered-elements"), std::to_string(data))
        << chart.Get("id");
  }
  bool body = false;
  for (const Element& e : tags) {
    if (e.tag != "body") continue;
    body = true;
    EXPECT_EQ(e.Get("data-charts-total"), std::to_string(charts.size()));
    EXPECT_EQ(e.Get("data-charts-shown"), std::to_string(kChartsShown));
    EXPECT_EQ(e.Get("data-charts-rendered"), std::to_string(kChartsShown));
  }
  EXPECT_TRUE(body) << "the page's script did not run";
  ExpectChartsShowRanks(dom, ranks_);
  EXPECT_NE(dom.find("<p class=\"caption\">Each category's largest live bytes"),
            std::string::npos);
  EXPECT_NE(dom.find("<p class=\"headline\" id=\"headline\">" +
                     EscapeXml(headline_) + "</p>"),
            std::string::npos);
  EXPECT_NE(dom.find("bit-identical on all 2 ranks"), std::string::npos);
}

// At 400 px (a phone) and 1600 px: every chart label at least
// kMinLabelHeightPx tall; every table and chart either fits the box it
// sits in, or scrolls sideways in a box of its own (nothing else scrolls
// out of view with it) with its whole width reachable; no page-wide
// sideways scroll; every number cell on one line. The figures are printed.
TEST_F(ReportHtmlBrowser, NarrowAndWideWindowsKeepLabelsLegibleAndCutNothing) {
  const size_t charts = kCharts;
  for (int width : {400, 1600}) {
    SCOPED_TRACE(std::to_string(width) + " px window");
    const Json layout = MeasureLayout(width);
    ASSERT_FALSE(layout.is_null());
    EXPECT_EQ(layout.at("viewport_width").get<int>(), width);
    EXPECT_LE(layout.at("page_width").get<int>(), width)
        << "the whole page scrolls sideways";

    const Json& labels = layout.at("labels");
    EXPECT_EQ(labels.size(), charts);
    for (const Json& chart : labels) {
      const std::string id = chart.at("chart");
      ASSERT_GT(chart.at("count").get<int>(), 0) << id;
      const Json& smallest = chart.at("smallest");
      const double height = smallest.at("height");
      std::cout << "[layout " << width << " px] chart " << id
                << ": smallest label \""
                << smallest.at("text").get<std::string>() << "\" " << height
                << " px tall\n";
      EXPECT_GE(height, kMinLabelHeightPx)
          << id << ": label \"" << smallest.at("text").get<std::string>()
          << "\"";
    }

    const Json& boxes = layout.at("boxes");
    // The fixture's four tables: config, categories, peak, steps.
    EXPECT_EQ(boxes.size(), charts + 4);
    for (const Json& box : boxes) {
      const std::string name = box.at("kind").get<std::string>() + " " +
                               box.at("id").get<std::string>();
      const double box_width = box.at("width");
      const int container = box.at("container_width");
      const bool scrolls = box.at("scrolls");
      const double hidden = box.at("hidden_right");
      std::cout << "[layout " << width << " px] " << name << ": " << box_width
                << " px wide in " << container << " px";
      if (scrolls) {
        std::cout << ", which scrolls it "
                  << (box.at("with").empty() ? std::string("alone")
                                             : "with " + box.at("with").dump())
                  << ", " << hidden << " px out of reach";
      }
      std::cout << "\n";
      const bool fits = box_width <= container + 0.5;
      const bool scrolls_alone = scrolls && box.at("with").empty();
      EXPECT_TRUE(fits || scrolls_alone)
          << name << " (" << box_width << " px) is wider than its " << container
          << " px box, which "
          << (scrolls ? "scrolls it together with " + box.at("with").dump()
                      : std::string("does not scroll"));
      // Scroll offsets are whole px: under 1 px hidden is rounding.
      EXPECT_LT(hidden, 1.0)
          << name << ": " << hidden << " px stay out of reach when scrolled";
    }

    for (const Json& label : layout.at("clipped")) {
      ADD_FAILURE() << "chart " << label.at("chart").get<std::string>()
                    << ": label \"" << label.at("text").get<std::string>()
                    << "\" cut by " << label.at("px") << " px";
    }
    std::cout << "[layout " << width << " px] " << layout.at("prose")
              << " sentences and headings, " << layout.at("prose_cut").size()
              << " reaching past the window\n";
    EXPECT_GT(layout.at("prose").get<int>(), 10);
    for (const Json& cut : layout.at("prose_cut")) {
      ADD_FAILURE() << "\"" << cut.at("text").get<std::string>()
                    << "...\" reaches " << cut.at("right")
                    << " px, past the window";
    }

    EXPECT_GT(layout.at("number_cells").get<int>(), 0);
    std::cout << "[layout " << width << " px] " << layout.at("number_cells")
              << " number cells, " << layout.at("wrapped").size()
              << " on more than one line\n";
    for (const Json& cell : layout.at("wrapped")) {
      ADD_FAILURE() << "number cell \"" << cell.at("text").get<std::string>()
                    << "\" takes " << cell.at("lines") << " lines";
    }
  }
}

// What the page says at a glance, at 400 and 1600 px: the headline, whole;
// every legend figure the Peak table's for each rank of its chart; the x
// axis switched from wall time to allocation events by its radio button.
TEST_F(ReportHtmlBrowser, HeadlineLegendAndXAxisAtBothWidths) {
  for (int width : {400, 1600}) {
    SCOPED_TRACE(std::to_string(width) + " px window");
    const Json layout = MeasureLayout(width);
    ASSERT_FALSE(layout.is_null());
    const Json& headline = layout.at("headline");
    ASSERT_TRUE(headline.is_object()) << "no headline on the page";
    EXPECT_EQ(headline.at("text").get<std::string>(), headline_);
    EXPECT_LE(headline.at("right").get<double>(), width + 0.5);

    const Json& legend = layout.at("legend");
    std::cout << "[layout " << width << " px] " << legend.at("compared")
              << " legend figures compared with the Peak table, "
              << legend.at("differ").size() << " differ\n";
    // Every category the run can hold, in both views, for each rank.
    const size_t categories =
        CategoriesOf(ranks_.front().context.config.train.dtype).size();
    EXPECT_EQ(legend.at("compared").get<size_t>(),
              categories * 2 * ranks_.size());
    for (const Json& d : legend.at("differ")) {
      ADD_FAILURE() << d.at("chart").get<std::string>() << " rank "
                    << d.at("rank").get<std::string>() << ": legend \""
                    << d.at("legend").get<std::string>() << "\", table \""
                    << d.at("table").get<std::string>() << "\"";
    }

    const Json& views = layout.at("views");
    EXPECT_EQ(views.at("before"), (Json{{"time", 1}, {"events", 0}}));
    EXPECT_EQ(views.at("after"), (Json{{"time", 0}, {"events", 1}}));
  }
}

TEST_F(ReportHtmlBrowser, ScreenshotIsAFullPngWithMoreThanABlankPage) {
  const fs::path shot = dir_ / "shot.png";
  const BrowserRun run = RunChromium(
      dir_, page_,
      "--window-size=1200,3000 --virtual-time-budget=2000 --screenshot=" +
          Quote(shot.string()));
  ASSERT_EQ(run.exit_code, 0) << Describe(run);
  const std::string png = ReadFile(shot);
  const PngSize size = ReadPngSize(png);
  ASSERT_TRUE(size.valid) << shot << " is not a PNG (" << png.size()
                          << " bytes)";
  EXPECT_EQ(size.width, 1200u);
  EXPECT_EQ(size.height, 3000u);

  const fs::path blank_page = Variant("blank.html",
                                      "<!DOCTYPE html><html><body></body>"
                                      "</html>\n");
  const fs::path blank_shot = dir_ / "blank.png";
  const BrowserRun blank = RunChromium(
      dir_, blank_page,
      "--window-size=1200,3000 --screenshot=" + Quote(blank_shot.string()));
  ASSERT_EQ(blank.exit_code, 0) << Describe(blank);
  const size_t blank_bytes = ReadFile(blank_shot).size();
  // Measured: the fixture's page compresses to about 10x a blank page's
  // PNG at this size; a page whose charts did not paint stays near 1x.
  EXPECT_GT(png.size(), 4 * blank_bytes)
      << "the screenshot is barely larger than a blank page's";
  std::error_code error;
  fs::copy_file(shot, kShotCopy, fs::copy_options::overwrite_existing, error);
  EXPECT_FALSE(error) << "cannot copy the screenshot to " << kShotCopy;
}

TEST_F(ReportHtmlBrowser, RequestsNothingFromTheNetwork) {
  // Without its CSP, so that the markup itself is what is tested: the CSP
  // would block a request before the network log could see it.
  ASSERT_EQ(Count(html_, kCsp), 1u);
  std::string dom;
  const NetLogRequests requests =
      LoadWithNetLog(Variant("no-csp.html", WithoutCsp()), &dom);
  EXPECT_GT(requests.events, 0u) << "an empty network log proves nothing";
  EXPECT_TRUE(requests.for_page.empty())
      << "the page requested:" << Join(requests.for_page);
  EXPECT_NE(
      dom.find("data-charts-rendered=\"" + std::to_string(kChartsShown) + "\""),
      std::string::npos)
      << "the page did not load in the logged run";
}

TEST_F(ReportHtmlBrowser, NetLogCheckCatchesAnExternalImage) {
  std::string dom;
  const NetLogRequests requests = LoadWithNetLog(
      Variant("external.html", WithExternalImage(WithoutCsp())), &dom);
  // The image, and possibly its host's lookup: nothing else.
  EXPECT_EQ(requests.for_page.count("http://example.invalid/x.png"), 1u)
      << "found:" << Join(requests.for_page)
      << "\nbrowser's own:" << Join(requests.browser);
  for (const std::string& url : requests.for_page) {
    EXPECT_EQ(url.rfind("http://example.invalid", 0), 0u) << url;
  }
  EXPECT_EQ(requests.browser.count("http://example.invalid/x.png"), 0u);
}

TEST_F(ReportHtmlBrowser, CspBlocksAnExternalImage) {
  std::string dom;
  const NetLogRequests requests = LoadWithNetLog(
      Variant("external-csp.html", WithExternalImage(html_)), &dom);
  EXPECT_GT(requests.events, 0u);
  EXPECT_TRUE(requests.for_page.empty())
      << "requested despite the CSP:" << Join(requests.for_page);
  EXPECT_NE(dom.find("example.invalid"), std::string::npos)
      << "the image was not in the page";
}

}  // namespace
}  // namespace memprof
