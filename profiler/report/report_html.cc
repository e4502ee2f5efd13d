#include "profiler/report/report_html.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "profiler/base/category.h"
#include "profiler/base/human_bytes.h"
#include "profiler/predict/prediction.h"
#include "profiler/report/rank_outcome.h"
#include "profiler/report/summary.h"
#include "profiler/report/svg_chart.h"

namespace memprof {
namespace {

// Narrow windows: a chart in a .scroll-x box keeps 740 px of its 900
// (svg_chart.h), which keeps its 11 px labels at 9 px or more, and scrolls
// sideways in the box, as does a table wider than the page; figures never
// wrap.
constexpr const char* kStyle = R"(
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif;
  color: #1d1d1d; background: #ffffff; margin: 0; }
main { max-width: 960px; margin: 0 auto; padding: 16px 24px 48px; }
h1 { font-size: 1.5em; margin: 0.6em 0 0.4em; }
h2 { font-size: 1.2em; margin: 1.6em 0 0.4em; border-bottom: 1px solid #ddd; }
h3 { font-size: 1em; margin: 1.2em 0 0.3em; }
dl.context { display: grid; grid-template-columns: max-content 1fr;
  gap: 2px 16px; margin: 0.5em 0 1em; }
dl.context dt { color: #555; }
dl.context dd { margin: 0; }
.warning { border: 1px solid #d9a400; background: #fff6d6; padding: 8px 14px;
  margin: 1em 0; border-radius: 4px; }
.warning p { margin: 0.2em 0; }
svg.chart { display: block; margin: 0.5em 0; background: #ffffff;
  max-width: 100%; height: auto; }
svg.chart .chart-title { font-size: 14px; font-weight: bold; }
svg.chart .axis-title { font-size: 12px; fill: #333; }
svg.chart .tick-label, svg.chart .bar-sublabel { fill: #444; font-size: 11px; }
svg.chart .band-label { fill: #555; font-size: 11px; }
.explain { color: #444; font-size: 0.92em; }
.scroll-x { overflow-x: auto; }
.scroll-x > svg.chart { min-width: 740px; }
table { border-collapse: collapse; margin: 0.4em 0; font-size: 0.92em; }
caption { caption-side: top; text-align: left; color: #555; padding: 2px 0 6px; }
th, td { padding: 3px 10px; border-bottom: 1px solid #e4e4e4; text-align: left; }
th { background: #f4f4f4; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums;
  white-space: nowrap; }
p.note { color: #444; font-size: 0.92em; margin: 0.3em 0; }
)";

// Measures every chart after layout and records it in the DOM.
constexpr const char* kScript = R"(
(function () {
  var charts = document.querySelectorAll("svg.chart");
  var rendered = 0;
  for (var i = 0; i < charts.length; ++i) {
    var box = charts[i].getBoundingClientRect();
    var data = charts[i].querySelectorAll(".area, .bar");
    var visible = 0;
    for (var j = 0; j < data.length; ++j) {
      if (data[j].getBoundingClientRect().width > 0) ++visible;
    }
    charts[i].setAttribute("data-rendered-width", Math.round(box.width));
    charts[i].setAttribute("data-rendered-height", Math.round(box.height));
    charts[i].setAttribute("data-rendered-elements", visible);
    if (box.width > 0 && box.height > 0 && visible > 0) ++rendered;
  }
  document.body.setAttribute("data-charts-total", charts.length);
  document.body.setAttribute("data-charts-rendered", rendered);
})();
)";

std::string Esc(const std::string& text) { return EscapeXml(text); }

// `content` (a chart or a table) in a box of its own that scrolls sideways
// when it is wider than the page, so that its section's heading and notes
// stay in place.
std::string ScrollX(const std::string& content) {
  return "<div class=\"scroll-x\">\n" + content + "</div>\n";
}

std::string Head(const std::string& title) {
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
         "<meta charset=\"utf-8\">\n"
         "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src "
         "'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
         "img-src data:\">\n"
         "<meta name=\"viewport\" content=\"width=device-width, "
         "initial-scale=1\">\n<title>" +
         Esc(title) + "</title>\n<style>" + kStyle + "</style>\n</head>\n";
}

std::string Context(const ReportText& text) {
  std::string out = "<h1>" + Esc(text.title) + "</h1>\n";
  if (!text.context.empty()) {
    out += "<dl class=\"context\">\n";
    for (const auto& [name, value] : text.context) {
      out += "<dt>" + Esc(name) + "</dt><dd>" + Esc(value) + "</dd>\n";
    }
    out += "</dl>\n";
  }
  const auto warning = [&](const char* id,
                           const std::vector<std::string>& lines) {
    if (lines.empty()) return;
    out += "<div class=\"warning\" id=\"" + std::string(id) +
           "\" role=\"alert\">\n";
    for (const std::string& line : lines) out += "<p>" + Esc(line) + "</p>\n";
    out += "</div>\n";
  };
  warning("incomplete", text.incomplete);
  warning("out-of-memory", text.out_of_memory);
  warning("killed", text.killed);
  return out;
}

std::vector<Band> PhaseBands(const RankReport& rank, int64_t step) {
  std::vector<Band> bands;
  for (const TimelineSegment& segment : rank.timeline) {
    if (segment.step != step) continue;
    const std::string phase(PhaseName(segment.phase));
    bands.push_back(Band{static_cast<double>(segment.begin_seq),
                         static_cast<double>(segment.end_seq),
                         phase,
                         std::string(PhaseTint(segment.phase)),
                         {{"data-phase", phase},
                          {"data-begin-seq", std::to_string(segment.begin_seq)},
                          {"data-end-seq", std::to_string(segment.end_seq)}}});
  }
  return bands;
}

std::vector<StackedLayer> SeriesLayers(const LiveSeries& series) {
  std::vector<StackedLayer> layers;
  for (Category c : kAllCategories) {
    const std::string name(CategoryName(c));
    const std::vector<int64_t>& values = series.bytes[Index(c)];
    const int64_t largest =
        values.empty() ? 0 : *std::max_element(values.begin(), values.end());
    layers.push_back(
        StackedLayer{name,
                     std::string(CategoryColor(c)),
                     values,
                     {{"data-category", name},
                      {"data-max-bytes", std::to_string(largest)}}});
  }
  return layers;
}

// One rank's live bytes by category over its series' steady-state step.
std::string RankChart(const RankReport& rank) {
  const int64_t r = rank.context.rank;
  const std::string& host = rank.context.hostname;
  const LiveSeries& series = rank.series;
  const int64_t step = series.step;
  std::string out = "<h3>Rank " + std::to_string(r) +
                    (host.empty() ? "" : " (" + Esc(host) + ")") + "</h3>\n";
  if (!ReachedSteadyState(rank)) {
    const std::string why = UnfinishedReason(rank);
    return out + "<p class=\"explain\">No steady-state step completed on " +
           "this rank" + (why.empty() ? "" : Esc(": it " + why)) + ".</p>\n";
  }
  if (step == 0 || series.seq.empty()) {
    return out +
           "<p class=\"explain\">No steady-state step was recorded for "
           "this rank.</p>\n";
  }
  StackedAreaChart chart;
  chart.id = "live-bytes-rank-" + std::to_string(r);
  chart.title = "Rank " + std::to_string(r) +
                ": live bytes by category, step " + std::to_string(step);
  chart.x_title = "allocation sequence (events)";
  chart.y_title = "live bytes";
  chart.x = series.seq;
  chart.layers = SeriesLayers(series);
  chart.bands = PhaseBands(rank, step);
  const PeakFigures& peak = rank.peak;
  if (peak.step == step) {
    chart.markers.push_back(
        Marker{static_cast<double>(peak.seq),
               "peak " + HumanBytes(peak.total_bytes),
               {{"data-seq", std::to_string(peak.seq)},
                {"data-bytes", std::to_string(peak.total_bytes)}}});
  }
  return out + ScrollX(RenderStackedArea(chart));
}

std::string TimelineSection(const RunView& view) {
  std::string out =
      "<section id=\"timeline\">\n<h2>Live memory over one steady-state "
      "step</h2>\n<p class=\"explain\">Live bytes by category right after "
      "each allocation event of the step, stacked; the bands are the phases "
      "of the step, the dashed line the rank's peak.</p>\n";
  for (const RankReport& rank : view.ranks) out += RankChart(rank);
  return out + "</section>\n";
}

// A run on a GPU: the caching allocator at each phase mark, stacked up to
// its reserved bytes: allocated, free in partly used segments (inactive
// split), free whole segments.
std::string GpuChart(const RankReport& rank) {
  const int64_t r = rank.context.rank;
  const std::vector<CudaSelfCheck>& checks = rank.cuda_run->checks;
  StackedAreaChart chart;
  chart.id = "gpu-allocator-rank-" + std::to_string(r);
  chart.title = "Rank " + std::to_string(r) + ": the CUDA caching allocator";
  chart.x_title = "phase mark";
  chart.y_title = "bytes";
  std::vector<int64_t> allocated, split, free_segments;
  for (size_t i = 0; i < checks.size(); ++i) {
    const CudaAllocatorFigures& f = checks[i].memprof;
    chart.x.push_back(static_cast<int64_t>(i));
    allocated.push_back(f.allocated);
    split.push_back(f.inactive_split);
    free_segments.push_back(f.reserved - f.allocated - f.inactive_split);
    if (i == 0 || checks[i].step != checks[i - 1].step) {
      chart.bands.push_back(
          Band{static_cast<double>(i),
               static_cast<double>(i) + 1,
               "step " + std::to_string(checks[i].step),
               std::string(PhaseTint(checks[i].phase)),
               {{"data-step", std::to_string(checks[i].step)}}});
    }
  }
  chart.layers = {
      {"allocated", "#4e79a7", allocated, {{"data-figure", "allocated"}}},
      {"inactive split", "#e15759", split, {{"data-figure", "inactive_split"}}},
      {"free segments",
       "#bab0ac",
       free_segments,
       {{"data-figure", "free_segments"}}}};
  return ScrollX(RenderStackedArea(chart));
}

std::string GpuSection(const RunView& view) {
  std::string charts;
  for (const RankReport& rank : view.ranks) {
    if (rank.cuda_run && !rank.cuda_run->checks.empty()) {
      charts += GpuChart(rank);
    }
  }
  if (charts.empty()) return "";
  return "<section id=\"gpu-allocator-chart\">\n<h2>The GPU's caching "
         "allocator over the run</h2>\n<p class=\"explain\">At each phase "
         "mark, the allocator's reserved bytes split into allocated blocks, "
         "free bytes in partly used segments (fragmentation) and free whole "
         "segments, as memprof follows them from the allocator's trace.</p>\n" +
         charts + "</section>\n";
}

Bar CategoryBar(const RankReport& rank, Category c, bool predicted) {
  const std::string name(CategoryName(c));
  const int64_t r = rank.context.rank;
  const char* figure = predicted ? "predicted_bytes" : ComparedFigure(c);
  const int64_t bytes =
      predicted ? rank.Of(c).predicted_bytes : ComparedBytes(rank.Of(c), c);
  const std::string kind = predicted ? "predicted" : "measured";
  return Bar{bytes,
             std::string(CategoryColor(c)),
             predicted,
             "r" + std::to_string(r),
             name + ", rank " + std::to_string(r) + ", " + kind + " (" +
                 figure + "): " + HumanBytes(bytes),
             {{"data-category", name},
              {"data-rank", std::to_string(r)},
              {"data-kind", kind},
              {"data-bytes", std::to_string(bytes)}}};
}

std::string PredictionSection(const RunView& view) {
  GroupedBarChart chart;
  chart.id = "predicted-vs-measured";
  chart.title = "Predicted vs measured, by category and rank";
  chart.y_title = "bytes";
  for (Category c :
       CategoriesOf(view.ranks.front().context.config.train.dtype)) {
    BarGroup group{std::string(CategoryName(c)), {}, {}};
    group.data = {{"data-category", group.label}};
    for (const RankReport& rank : view.ranks) {
      group.bars.push_back(CategoryBar(rank, c, true));
      // A rank cut short before the steady state has no whole step to show.
      if (ReachedSteadyState(rank)) {
        group.bars.push_back(CategoryBar(rank, c, false));
      }
    }
    chart.groups.push_back(std::move(group));
  }
  chart.legend = {
      LegendEntry{"predicted", "#777777", true, {{"data-kind", "predicted"}}},
      LegendEntry{"measured", "#777777", false, {{"data-kind", "measured"}}}};
  return "<section id=\"prediction\">\n<h2>Predicted vs measured</h2>\n"
         "<p class=\"explain\">Per category and rank (r0, r1, ...): the "
         "prediction (light) next to what was measured (solid): the "
         "category's largest live bytes over a steady-state step, and for "
         "temporaries the workspace live at the peak.</p>\n" +
         ScrollX(RenderGroupedBars(chart)) + "</section>\n";
}

std::string Cell(const char* tag, const std::string& text, bool numeric) {
  return std::string("<") + tag + (numeric ? " class=\"num\"" : "") + ">" +
         Esc(text) + "</" + tag + ">";
}

bool Numeric(const ReportTable& table, size_t column) {
  return column < table.numeric.size() && table.numeric[column];
}

}  // namespace

std::string HtmlTable(const ReportTable& table) {
  std::string out = "<section class=\"report-table\" id=\"" + Esc(table.id) +
                    "\">\n<h2>" + Esc(table.title) + "</h2>\n";
  std::string markup = "<table>\n";
  if (!table.caption.empty()) {
    markup += "<caption>" + Esc(table.caption) + "</caption>\n";
  }
  markup += "<thead><tr>";
  for (size_t i = 0; i < table.header.size(); ++i) {
    markup += Cell("th", table.header[i], Numeric(table, i));
  }
  markup += "</tr></thead>\n<tbody>\n";
  for (const std::vector<std::string>& row : table.rows) {
    markup += "<tr>";
    for (size_t i = 0; i < row.size(); ++i) {
      markup += Cell("td", row[i], Numeric(table, i));
    }
    markup += "</tr>\n";
  }
  out += ScrollX(markup + "</tbody>\n</table>\n");
  for (const std::string& note : table.notes) {
    out += "<p class=\"note\">" + Esc(note) + "</p>\n";
  }
  return out + "</section>\n";
}

namespace {

std::string Redundancy(const ReportText& text) {
  if (text.redundancy.empty()) return "";
  std::string out =
      "<section id=\"redundancy\">\n<h2>Redundancy across ranks</h2>\n<ul>\n";
  for (const std::string& sentence : text.redundancy) {
    out += "<li>" + Esc(sentence) + "</li>\n";
  }
  return out + "</ul>\n</section>\n";
}

}  // namespace

std::string FormatReportHtml(const RunView& view, const ReportText& text) {
  std::string out = Head(text.title) + "<body>\n<main>\n" + Context(text);
  if (!view.ranks.empty()) {
    out += TimelineSection(view);
    out += PredictionSection(view);
    out += GpuSection(view);
  }
  for (const ReportTable& table : text.tables) out += HtmlTable(table);
  out += Redundancy(text);
  out += "</main>\n<script>";
  out += kScript;
  return out + "</script>\n</body>\n</html>\n";
}

std::string HtmlPage(const std::string& title, const std::string& body) {
  return Head(title) + "<body>\n<main>\n<h1>" + Esc(title) + "</h1>\n" + body +
         "</main>\n<script>" + kScript + "</script>\n</body>\n</html>\n";
}

}  // namespace memprof
