#include "profiler/report/report_html.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "profiler/base/category.h"
#include "profiler/base/human_bytes.h"
#include "profiler/predict/prediction.h"
#include "profiler/report/headline.h"
#include "profiler/report/rank_outcome.h"
#include "profiler/report/summary.h"
#include "profiler/report/svg_chart.h"

namespace memprof {
namespace {

// Narrow windows: a chart in a .scroll-x box keeps 740 px of its 900
// (svg_chart.h), which keeps its 11 px labels at 9 px or more, and scrolls
// sideways in the box, as does a table wider than the page; figures never
// wrap; sentences (the headline, captions, notes) wrap at the page's width,
// never inside a box that scrolls. The timeline's x-axis choice is two
// radio buttons that show one view of the charts and hide the other (CSS
// alone).
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
th, td { padding: 3px 10px; border-bottom: 1px solid #e4e4e4; text-align: left; }
th { background: #f4f4f4; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums;
  white-space: nowrap; }
p.note { color: #444; font-size: 0.92em; margin: 0.3em 0; }
p.caption { color: #555; font-size: 0.92em; margin: 0.2em 0 0.4em; }
p.headline { font-size: 1.1em; font-weight: 600; background: #f1f5fa;
  border-left: 4px solid #4e79a7; padding: 8px 14px; margin: 0.8em 0; }
svg.chart .legend-title { fill: #333; font-weight: bold; }
.x-axis-choice { margin-right: 0.5em; }
#timeline label { margin-right: 1em; white-space: nowrap; }
#x-axis-time:checked ~ .timeline-charts .view-events,
#x-axis-events:checked ~ .timeline-charts .view-time { display: none; }
)";

// Measures every chart shown after layout (not those of the hidden x-axis
// view) and records it in the DOM.
constexpr const char* kScript = R"(
(function () {
  var charts = document.querySelectorAll("svg.chart");
  var shown = 0, rendered = 0;
  for (var i = 0; i < charts.length; ++i) {
    if (charts[i].getClientRects().length === 0) continue;
    ++shown;
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
  document.body.setAttribute("data-charts-shown", shown);
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
  if (!text.headline.empty()) {
    out += "<p class=\"headline\" id=\"headline\">" + Esc(text.headline) +
           "</p>\n";
  }
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

// The phases of the step `step`, in order.
std::vector<const TimelineSegment*> StepSegments(const RankReport& rank,
                                                 int64_t step) {
  std::vector<const TimelineSegment*> out;
  for (const TimelineSegment& segment : rank.timeline) {
    if (segment.step == step) out.push_back(&segment);
  }
  return out;
}

// Note [Identical ranks]
// Ranks whose timelines are identical share one chart, labelled "ranks
// 0–7": the same step, the same events in it, the same live bytes of every
// category after each event, the same phases at the same events and the
// same peak. Their wall times may differ; the time view of a shared chart
// shows the first rank's.
bool SameTimeline(const RankReport& a, const RankReport& b) {
  if (a.series.step != b.series.step || a.series.seq != b.series.seq ||
      a.series.bytes != b.series.bytes || a.peak.step != b.peak.step ||
      a.peak.seq != b.peak.seq || a.peak.breakdown != b.peak.breakdown) {
    return false;
  }
  const auto phases = StepSegments(a, a.series.step);
  const auto others = StepSegments(b, b.series.step);
  if (phases.size() != others.size()) return false;
  for (size_t i = 0; i < phases.size(); ++i) {
    if (phases[i]->phase != others[i]->phase ||
        phases[i]->begin_seq != others[i]->begin_seq ||
        phases[i]->end_seq != others[i]->end_seq) {
      return false;
    }
  }
  return true;
}

// Note [Time view]
// The series records events, not times. The time view places each event
// by its phase: the phase's events spread evenly over the phase's wall
// time (between its marks, on the rank's clock), so that every phase is as
// wide as it took; within a phase the spacing is an estimate. Times are in
// microseconds since the step's first mark.
struct EventClock {
  std::vector<const TimelineSegment*> phases;
  int64_t Us(int64_t seq) const {
    const int64_t start = phases.front()->begin_us;
    if (seq < phases.front()->begin_seq) return 0;
    for (const TimelineSegment* p : phases) {
      if (seq >= p->end_seq) continue;
      const int64_t events = std::max<int64_t>(1, p->end_seq - p->begin_seq);
      return p->begin_us - start +
             (seq - p->begin_seq) * (p->end_us - p->begin_us) / events;
    }
    return phases.back()->end_us - start;
  }
};

std::vector<Band> PhaseBands(const std::vector<const TimelineSegment*>& phases,
                             const EventClock* clock) {
  std::vector<Band> bands;
  for (const TimelineSegment* segment : phases) {
    const std::string phase(PhaseName(segment->phase));
    Band band{static_cast<double>(segment->begin_seq),
              static_cast<double>(segment->end_seq),
              phase,
              std::string(PhaseTint(segment->phase)),
              {{"data-phase", phase},
               {"data-begin-seq", std::to_string(segment->begin_seq)},
               {"data-end-seq", std::to_string(segment->end_seq)}}};
    if (clock != nullptr) {
      const int64_t start = clock->phases.front()->begin_us;
      band.begin = static_cast<double>(segment->begin_us - start);
      band.end = static_cast<double>(segment->end_us - start);
      band.data.push_back(
          {"data-duration-us",
           std::to_string(segment->end_us - segment->begin_us)});
    }
    bands.push_back(std::move(band));
  }
  return bands;
}

// The categories the run's dtype can hold, each with its live bytes over
// the series, its largest and its live bytes at the peak.
std::vector<StackedLayer> SeriesLayers(const RankReport& rank) {
  std::vector<StackedLayer> layers;
  for (Category c : CategoriesOf(rank.context.config.train.dtype)) {
    const std::string name(CategoryName(c));
    const std::vector<int64_t>& values = rank.series.bytes[Index(c)];
    const int64_t largest =
        values.empty() ? 0 : *std::max_element(values.begin(), values.end());
    layers.push_back(StackedLayer{
        name,
        std::string(CategoryColor(c)),
        values,
        {{"data-category", name},
         {"data-max-bytes", std::to_string(largest)},
         {"data-peak-bytes", std::to_string(rank.peak.breakdown[Index(c)])}}});
  }
  return layers;
}

std::string RankList(const std::vector<const RankReport*>& group) {
  std::string out;
  for (const RankReport* rank : group) {
    out += (out.empty() ? "" : " ") + std::to_string(rank->context.rank);
  }
  return out;
}

std::string Capitalized(std::string text) {
  if (!text.empty()) text[0] = static_cast<char>(std::toupper(text[0]));
  return text;
}

// The live bytes by category of a group of identical ranks (Note
// [Identical ranks]) over the steady-state peak's step, against wall time
// (`time`: Note [Time view]) or allocation events.
std::string GroupChart(const std::vector<const RankReport*>& group, bool time) {
  const RankReport& rank = *group.front();
  std::vector<int> numbers;
  for (const RankReport* r : group) numbers.push_back(r->context.rank);
  const LiveSeries& series = rank.series;
  const std::vector<const TimelineSegment*> phases =
      StepSegments(rank, series.step);
  const bool timed = time && !phases.empty();
  const EventClock clock{phases};
  const bool at_peak = rank.peak.step == series.step;
  StackedAreaChart chart;
  chart.id = std::string("live-bytes-") + (time ? "time" : "events") +
             "-rank-" + std::to_string(rank.context.rank);
  chart.data = {{"data-ranks", RankList(group)},
                {"data-x", time ? "time" : "events"}};
  chart.title = Capitalized(RanksLabel(numbers)) +
                ": live bytes by category, step " + std::to_string(series.step);
  chart.x_title =
      timed ? "wall time in the step (ms)" : "allocation events in the step";
  chart.x_units = timed ? Units::kMicroseconds : Units::kCount;
  chart.y_title = "live bytes";
  chart.legend_title = at_peak ? "at the peak:" : "largest:";
  for (int64_t seq : series.seq) {
    chart.x.push_back(timed ? clock.Us(seq) : seq);
  }
  chart.layers = SeriesLayers(rank);
  if (at_peak) {
    for (Category c : CategoriesOf(rank.context.config.train.dtype)) {
      chart.legend_values.push_back(rank.peak.breakdown[Index(c)]);
    }
  }
  chart.bands = PhaseBands(phases, timed ? &clock : nullptr);
  const PeakFigures& peak = rank.peak;
  if (at_peak) {
    chart.markers.push_back(
        Marker{static_cast<double>(timed ? clock.Us(peak.seq) : peak.seq),
               "peak " + HumanBytes(peak.total_bytes),
               {{"data-seq", std::to_string(peak.seq)},
                {"data-bytes", std::to_string(peak.total_bytes)}}});
  }
  return "<div class=\"view-" + std::string(time ? "time" : "events") +
         "\">\n" + ScrollX(RenderStackedArea(chart)) + "</div>\n";
}

// "Rank 1 (host-a)", "Ranks 0–7 (host-a, host-b)".
std::string GroupHeading(const std::vector<const RankReport*>& group) {
  std::vector<int> numbers;
  std::vector<std::string> hosts;
  for (const RankReport* rank : group) {
    numbers.push_back(rank->context.rank);
    const std::string& host = rank->context.hostname;
    if (!host.empty() &&
        std::find(hosts.begin(), hosts.end(), host) == hosts.end()) {
      hosts.push_back(host);
    }
  }
  std::string list;
  for (const std::string& host : hosts)
    list += (list.empty() ? "" : ", ") + host;
  return "<h3>" + Esc(Capitalized(RanksLabel(numbers))) +
         (list.empty() ? "" : " (" + Esc(list) + ")") + "</h3>\n";
}

// A rank with no steady-state step to draw: why, in place of its chart.
std::string NoChart(const RankReport& rank) {
  std::string out = GroupHeading({&rank});
  if (!ReachedSteadyState(rank)) {
    const std::string why = UnfinishedReason(rank);
    return out + "<p class=\"explain\">No steady-state step completed on " +
           "this rank" + (why.empty() ? "" : Esc(": it " + why)) + ".</p>\n";
  }
  return out +
         "<p class=\"explain\">No steady-state step was recorded for "
         "this rank.</p>\n";
}

std::string TimelineSection(const RunView& view) {
  std::string charts;
  std::vector<std::vector<const RankReport*>> groups;
  for (const RankReport& rank : view.ranks) {
    if (!ReachedSteadyState(rank) || rank.series.step == 0 ||
        rank.series.seq.empty()) {
      charts += NoChart(rank);
      continue;
    }
    auto same = std::find_if(groups.begin(), groups.end(), [&](auto& group) {
      return SameTimeline(*group.front(), rank);
    });
    if (same == groups.end()) {
      groups.push_back({&rank});
    } else {
      same->push_back(&rank);
    }
  }
  for (const auto& group : groups) {
    charts += GroupHeading(group) + GroupChart(group, /*time=*/true) +
              GroupChart(group, /*time=*/false);
  }
  return "<section id=\"timeline\">\n<h2>Live memory over one steady-state "
         "step</h2>\n<p class=\"explain\">Live bytes by category over the "
         "step of the peak, stacked; the bands are the phases of the step, "
         "the dashed line the peak. The legend gives each category's live "
         "bytes at the peak: the figures of the Peak table. Ranks whose "
         "timelines are identical (the same live bytes of every category "
         "after every event, the same phases) share one chart. Wall time "
         "draws each phase as wide as it took, its allocation events spread "
         "evenly over it; allocation events draw every event as wide as the "
         "next, so a phase that allocates often looks long.</p>\n"
         "<span class=\"x-axis-choice\">x axis:</span>\n"
         "<input type=\"radio\" name=\"x-axis\" id=\"x-axis-time\" "
         "checked><label for=\"x-axis-time\">wall time</label>\n"
         "<input type=\"radio\" name=\"x-axis\" id=\"x-axis-events\">"
         "<label for=\"x-axis-events\">allocation events</label>\n"
         "<div class=\"timeline-charts\">\n" +
         charts + "</div>\n</section>\n";
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
  chart.legend_title = "largest:";
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
  // The caption wraps at the page's width, outside the box that scrolls.
  if (!table.caption.empty()) {
    out += "<p class=\"caption\">" + Esc(table.caption) + "</p>\n";
  }
  std::string markup = "<table>\n";
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

std::string HtmlChart(const std::string& svg) { return ScrollX(svg); }

std::string HtmlPage(const std::string& title, const std::string& body) {
  return Head(title) + "<body>\n<main>\n<h1>" + Esc(title) + "</h1>\n" + body +
         "</main>\n<script>" + kScript + "</script>\n</body>\n</html>\n";
}

}  // namespace memprof
