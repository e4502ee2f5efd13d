// report.html: the SVG charts' ticks, colours and data attributes, the
// page's text, and the page in a real headless Chromium: its layout (the
// page's script measures every chart), a screenshot, the DOM with the
// fixture's figures, and a network log showing it requested nothing.
#include "profiler/report/report_html.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiler/base/category.h"
#include "profiler/base/human_bytes.h"
#include "profiler/predict/prediction.h"
#include "profiler/report/report_text.h"
#include "profiler/report/run_reports.h"
#include "profiler/report/svg_chart.h"
#include "tests/text_file.h"

namespace memprof {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

const char kFixtureDir[] = MEMPROF_SOURCE_DIR "/tests/data/run-mlp-tiny-ws2";
const char kShotCopy[] = "/tmp/report-html-shot.png";
const char kCsp[] =
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

std::string Unescape(std::string text) {
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
std::vector<Element> StartTags(const std::string& html) {
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

std::vector<Element> WithClass(const std::vector<Element>& elements,
                               const std::string& cls) {
  std::vector<Element> out;
  for (const Element& e : elements) {
    if (e.HasClass(cls)) out.push_back(e);
  }
  return out;
}

// The elements of <svg id="id">...</svg>, the svg first.
std::vector<Element> InChart(const std::string& html, const std::string& id) {
  const size_t at = html.find("id=\"" + id + "\"");
  if (at == std::string::npos) return {};
  const size_t begin = html.rfind('<', at);
  const size_t end = html.find("</svg>", at);
  return StartTags(html.substr(begin, end - begin));
}

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + needle.size())) {
    ++n;
  }
  return n;
}

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

// ---------------------------------------------------------------- files

fs::path MakeTempDir() {
  std::string pattern =
      (fs::temp_directory_path() / "memprof-html-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) return {};
  return pattern;
}

std::vector<Json> FixtureRanks() {
  std::vector<Json> ranks;
  for (int r = 0; r < 2; ++r) {
    const fs::path path =
        fs::path(kFixtureDir) / ("rank-" + std::to_string(r) + ".json");
    const std::string text = ReadFile(path);
    EXPECT_FALSE(text.empty()) << "fixture missing: " << path;
    if (text.empty()) return {};
    ranks.push_back(Json::parse(text));
  }
  return ranks;
}

// The view FormatReportHtml reads: the ranks, in rank order (the summary
// is not drawn).
RunView ViewOf(std::vector<Json> ranks) {
  RunView view;
  view.dir = kFixtureDir;
  view.world_size = static_cast<int>(ranks.size());
  view.ranks = std::move(ranks);
  return view;
}

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

std::set<std::string> NonzeroSeriesCategories(const Json& rank) {
  std::set<std::string> out;
  for (const auto& [name, values] : rank["series"]["bytes"].items()) {
    for (const Json& v : values) {
      if (v.get<int64_t>() != 0) out.insert(name);
    }
  }
  return out;
}

int64_t SeriesMax(const Json& rank, const std::string& category) {
  int64_t largest = 0;
  for (const Json& v : rank["series"]["bytes"][category]) {
    largest = std::max(largest, v.get<int64_t>());
  }
  return largest;
}

// Every bar of the predicted-vs-measured chart carries its rank report's
// figure; every category in a rank's series has its area.
void ExpectChartsShowRanks(const std::string& html,
                           const std::vector<Json>& ranks) {
  const std::vector<Element> bars =
      WithClass(InChart(html, "predicted-vs-measured"), "bar");
  EXPECT_EQ(bars.size(), ranks.size() * kNumCategories * 2);
  for (const Json& rank : ranks) {
    const std::string r = std::to_string(rank["context"]["rank"].get<int>());
    for (Category c : kAllCategories) {
      const std::string name(CategoryName(c));
      const Json& entry = rank["categories"][name];
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
                    std::to_string(entry[figure].get<int64_t>()))
              << name << " rank " << r << " " << kind;
          EXPECT_EQ(bar.Get("fill"), CategoryColor(c));
        }
        EXPECT_EQ(found, 1) << name << " rank " << r << " " << kind;
      }
    }
    const std::vector<Element> areas =
        WithClass(InChart(html, "live-bytes-rank-" + r), "area");
    std::set<std::string> drawn;
    for (const Element& area : areas) {
      const std::string name = area.Get("data-category");
      drawn.insert(name);
      EXPECT_EQ(area.Get("data-max-bytes"),
                std::to_string(SeriesMax(rank, name)));
      EXPECT_EQ(area.Get("data-points"),
                std::to_string(rank["series"]["seq"].size()));
      EXPECT_EQ(area.Get("fill"), CategoryColor(*CategoryFromName(name)));
    }
    EXPECT_EQ(drawn, NonzeroSeriesCategories(rank)) << "rank " << r;
    EXPECT_FALSE(drawn.empty());
  }
}

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

// ================================================================ SvgChart

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

// ================================================================ ReportHtml

TEST(ReportHtml, PageIsSelfContained) {
  const std::vector<Json> ranks = FixtureRanks();
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
  const std::vector<Json> ranks = FixtureRanks();
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
  EXPECT_NE(html.find("<section class=\"report-table\" id=\"categories\">"
                      "\n<h2>Memory by category</h2>"),
            std::string::npos);
  EXPECT_NE(html.find("<caption>Largest live bytes over a steady-state "
                      "step.</caption>"),
            std::string::npos);
  EXPECT_NE(html.find("<tr><td>weights</td><td class=\"num\">1.00 MiB</td>"
                      "<td class=\"num\">1.00 MiB</td></tr>"),
            std::string::npos);
  EXPECT_NE(html.find("<th class=\"num\">measured</th>"), std::string::npos);
  EXPECT_EQ(Count(html, "<script>"), 1u);  // the page's own, not the cell's
  EXPECT_NE(html.find("<td>&lt;script&gt;alert(1)&lt;/script&gt;</td>"),
            std::string::npos);
  EXPECT_NE(html.find("<p class=\"note\">Figures are per rank.</p>"),
            std::string::npos);
  EXPECT_NE(html.find("<li>weights: identical on every rank, 1 copy would "
                      "do.</li>"),
            std::string::npos);
  ExpectChartsShowRanks(html, {ranks[0]});
}

TEST(ReportHtml, ChartsCarryEveryRanksFigures) {
  const std::vector<Json> ranks = FixtureRanks();
  ASSERT_EQ(ranks.size(), 2u);
  const std::string html = FormatReportHtml(ViewOf(ranks), HandText());
  ExpectChartsShowRanks(html, ranks);
  const std::vector<Element> tags = StartTags(html);
  for (const Json& rank : ranks) {
    const std::string r = std::to_string(rank["context"]["rank"].get<int>());
    const int64_t step = rank["series"]["step"].get<int64_t>();
    std::set<std::string> expected, drawn;
    for (const Json& segment : rank["timeline"]) {
      if (segment["step"].get<int64_t>() != step) continue;
      expected.insert(segment["phase"].get<std::string>() + " " +
                      std::to_string(segment["begin_seq"].get<int64_t>()) +
                      "-" + std::to_string(segment["end_seq"].get<int64_t>()));
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
}

TEST(ReportHtml, RankWithoutSeriesGetsANoteInsteadOfAChart) {
  std::vector<Json> ranks = FixtureRanks();
  ASSERT_EQ(ranks.size(), 2u);
  ranks[1]["series"]["step"] = 0;
  const std::string html = FormatReportHtml(ViewOf(ranks), HandText());
  EXPECT_NE(html.find("id=\"live-bytes-rank-0\""), std::string::npos);
  EXPECT_EQ(html.find("id=\"live-bytes-rank-1\""), std::string::npos);
  EXPECT_NE(html.find("No steady-state step was recorded"), std::string::npos);
}

// ================================================================ browser

class ReportHtmlBrowser : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(access(ChromiumPath().c_str(), X_OK), 0)
        << "no Chromium at " << ChromiumPath()
        << ": the report.html test renders the page in a real headless "
           "browser. Run scripts/deps.sh (it installs Debian's chromium), or "
           "apt-get install chromium.";
    dir_ = MakeTempDir();
    ASSERT_FALSE(dir_.empty()) << "cannot create a temporary directory";
    ranks_ = FixtureRanks();
    ASSERT_EQ(ranks_.size(), 2u);
    // The page exactly as a profile writes it for the fixture's run.
    const RunView view = LoadRunView(kFixtureDir);
    html_ = FormatReportHtml(view, BuildReportText(view));
    page_ = dir_ / "report.html";
    WriteFile(page_, html_);
  }
  void TearDown() override {
    if (!dir_.empty() && !HasFailure()) fs::remove_all(dir_);
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

  fs::path dir_;
  fs::path page_;
  std::string html_;
  std::vector<Json> ranks_;
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
  ASSERT_EQ(charts.size(), ranks_.size() + 1);
  for (const Element& chart : charts) {
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
    EXPECT_EQ(e.Get("data-charts-rendered"), std::to_string(charts.size()));
  }
  EXPECT_TRUE(body) << "the page's script did not run";
  ExpectChartsShowRanks(dom, ranks_);
  EXPECT_NE(dom.find("<caption>Each category's largest live bytes"),
            std::string::npos);
  EXPECT_NE(dom.find("bit-identical on all 2 ranks"), std::string::npos);
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
  EXPECT_NE(dom.find("data-charts-rendered=\"" +
                     std::to_string(ranks_.size() + 1) + "\""),
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
