#include "profiler/report/sweep_page.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <utility>
#include <vector>

#include "profiler/base/category.h"
#include "profiler/base/human_bytes.h"
#include "profiler/report/report_html.h"
#include "profiler/report/svg_chart.h"

namespace memprof {
namespace {

using Json = nlohmann::ordered_json;

std::string Ms(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f ms", 1e3 * seconds);
  return text;
}

std::string Percent(double share) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%", 100 * share);
  return text;
}

// "48.10 - 52.30 ms over 2 steps, 8.7%": the shortest and longest
// steady-state step, how many there were and their spread.
std::string StepRange(const Json& row) {
  char text[96];
  std::snprintf(text, sizeof text, "%.2f - %.2f ms over %lld step%s, %.1f%%",
                1e3 * row["step_seconds_min"].get<double>(),
                1e3 * row["step_seconds_max"].get<double>(),
                static_cast<long long>(row["steady_steps"].get<int64_t>()),
                row["steady_steps"].get<int64_t>() == 1 ? "" : "s",
                100 * row["step_spread"].get<double>());
  return text;
}

// A row's train.grad_accum (since memprof.sweep/1.2; 1 before).
int64_t GradAccumOf(const Json& row) { return row.value("grad_accum", 1); }

}  // namespace

std::string PointLabel(const Json& row) {
  const int64_t k = GradAccumOf(row);
  return "N=" + std::to_string(row["world_size"].get<int64_t>()) +
         (row["zero_stage"].get<int64_t>() == 1 ? " ZeRO-1" : "") +
         (k > 1 ? " K=" + std::to_string(k) : "");
}

std::string FailedSentence(const Json& sweep) {
  const Json& failed = sweep["failed"];
  const int64_t stage = failed["zero_stage"].get<int64_t>();
  const int64_t n = failed["world_size"].get<int64_t>();
  const int64_t k = failed.value("grad_accum", 0);
  return "The run at " + std::to_string(n) + (n == 1 ? " rank" : " ranks") +
         (stage >= 0 ? ", ZeRO stage " + std::to_string(stage) : "") +
         (k > 0 ? ", " + std::to_string(k) + " micro-batches per step" : "") +
         " failed (exit " + std::to_string(failed["exit_code"].get<int>()) +
         "; see " + failed["log"].get<std::string>() +
         "); the rows above are the points that completed before it, and no "
         "later point ran.";
}

ReportTable SweepTable(const Json& sweep, bool warnings_as_notes) {
  ReportTable table;
  table.id = "sweep";
  table.title =
      "Per rank, against the number of ranks and the gradient accumulation";
  table.caption =
      "Global batch " + std::to_string(sweep["global_batch"].get<int64_t>()) +
      " per optimizer step; each category's bytes on one rank (its largest "
      "live bytes over a steady-state step; temporaries at the peak), then "
      "the median steady-state optimizer step (all its micro-batches), the "
      "time in the Reducer's all-reduces and, under ZeRO-1, in the parameter "
      "exchange after the optimizer step.";
  table.header = {"ranks", "ZeRO", "micro-batch", "accumulation"};
  for (Category c : kAllCategories) table.header.emplace_back(CategoryName(c));
  for (const char* h : {"peak", "step", "step range", "all-reduce", "exchange",
                        "communication share"}) {
    table.header.emplace_back(h);
  }
  table.numeric.assign(table.header.size(), true);
  for (const Json& row : sweep["rows"]) {
    std::vector<std::string> cells = {
        std::to_string(row["world_size"].get<int64_t>()),
        std::to_string(row["zero_stage"].get<int64_t>()),
        std::to_string(row["micro_batch"].get<int64_t>()),
        std::to_string(GradAccumOf(row))};
    for (Category c : kAllCategories) {
      cells.push_back(HumanBytes(
          row["bytes"][std::string(CategoryName(c))].get<int64_t>()));
    }
    cells.push_back(HumanBytes(row["peak_bytes"].get<int64_t>()));
    cells.push_back(Ms(row["step_seconds"].get<double>()));
    cells.push_back(StepRange(row));
    cells.push_back(Ms(row["comm_seconds"].get<double>()));
    cells.push_back(Ms(row["exchange_seconds"].get<double>()));
    cells.push_back(Percent(row["comm_share"].get<double>()));
    table.rows.push_back(cells);
  }
  table.notes.push_back(
      "Model state (weights, gradients, optimizer state, DDP buckets) is the "
      "same on every rank at every N and every accumulation K; activations "
      "and inputs follow the per-rank micro-batch G/(N K); under ZeRO-1 the "
      "optimizer state is the rank's partition instead. All-reduce is the "
      "union of the Reducer's all-reduces, issue to completion, within each "
      "optimizer step (it overlaps the last micro-batch's backward: the "
      "micro-batches before it accumulate their gradients without "
      "communicating); exchange is ZeRO-1's broadcast of "
      "the updated parameters from their owners, first issue to last "
      "completion; the share is both over the step. The step range is the "
      "shortest and the longest steady-state step.");
  char threshold[64];
  std::snprintf(threshold, sizeof threshold, "%.0f%%", 100 * kUnreliableSpread);
  table.notes.push_back(
      std::string("A point's step time is flagged as not comparable when its "
                  "steady-state steps spread over more than ") +
      threshold +
      " of their median ((longest - shortest) / median): a difference "
      "between points smaller than their spread says nothing about N.");
  if (warnings_as_notes) {
    for (const Json& warning : sweep["warnings"]) {
      table.notes.push_back("Warning: " + warning.get<std::string>());
    }
  }
  if (!sweep["failed"].is_null()) table.notes.push_back(FailedSentence(sweep));
  return table;
}

std::string SweepBytesSvg(const Json& sweep) {
  GroupedBarChart chart;
  chart.id = "sweep-bytes";
  chart.title = "Per-rank bytes by category against the number of ranks";
  chart.y_title = "bytes per rank";
  for (const Json& row : sweep["rows"]) {
    const int64_t n = row["world_size"].get<int64_t>();
    BarGroup group{PointLabel(row) + ", micro-batch " +
                       std::to_string(row["micro_batch"].get<int64_t>()),
                   {},
                   {{"data-world-size", std::to_string(n)}}};
    for (Category c : kAllCategories) {
      const std::string name(CategoryName(c));
      const int64_t bytes = row["bytes"][name].get<int64_t>();
      group.bars.push_back(Bar{bytes,
                               std::string(CategoryColor(c)),
                               false,
                               "",
                               name + ": " + HumanBytes(bytes),
                               {{"data-category", name},
                                {"data-world-size", std::to_string(n)},
                                {"data-bytes", std::to_string(bytes)}}});
    }
    chart.groups.push_back(std::move(group));
  }
  for (Category c : kAllCategories) {
    chart.legend.push_back(
        LegendEntry{std::string(CategoryName(c)),
                    std::string(CategoryColor(c)),
                    false,
                    {{"data-category", std::string(CategoryName(c))}}});
  }
  return RenderGroupedBars(chart);
}

namespace {

int64_t Us(double seconds) { return static_cast<int64_t>(1e6 * seconds); }

// "12.34 ms" from microseconds.
std::string MsOfUs(int64_t us) { return Ms(static_cast<double>(us) / 1e6); }

// Per point: the median steady-state step with a whisker from the shortest
// to the longest (Note [Step-time spread]), then its computation, all-reduce
// and parameter exchange, in ms.
std::string SweepTimeSvg(const Json& sweep) {
  GroupedBarChart chart;
  chart.id = "sweep-step-time";
  chart.title =
      "Median steady-state step (whisker: shortest to longest) and its parts";
  chart.y_title = "time (ms)";
  chart.y_units = Units::kMicroseconds;
  for (const Json& row : sweep["rows"]) {
    const int64_t n = row["world_size"].get<int64_t>();
    BarGroup group{
        PointLabel(row), {}, {{"data-world-size", std::to_string(n)}}};
    const int64_t step_us = Us(row["step_seconds"].get<double>());
    const int64_t min_us = Us(row["step_seconds_min"].get<double>());
    const int64_t max_us = Us(row["step_seconds_max"].get<double>());
    const int64_t comm_us = Us(row["comm_seconds"].get<double>());
    const int64_t exchange_us = Us(row["exchange_seconds"].get<double>());
    const int64_t compute_us =
        std::max<int64_t>(0, step_us - comm_us - exchange_us);
    Bar step{step_us,
             "#79706e",
             false,
             "step",
             "median step: " + MsOfUs(step_us) + " (shortest " +
                 MsOfUs(min_us) + ", longest " + MsOfUs(max_us) + ")",
             {{"data-kind", "step"},
              {"data-us", std::to_string(step_us)},
              {"data-min-us", std::to_string(min_us)},
              {"data-max-us", std::to_string(max_us)}}};
    chart.ranges.push_back(
        BarRange{chart.groups.size(), group.bars.size(), min_us, max_us});
    group.bars.push_back(std::move(step));
    group.bars.push_back(Bar{
        compute_us,
        "#4e79a7",
        false,
        "compute",
        "computation: " + MsOfUs(compute_us),
        {{"data-kind", "compute"}, {"data-us", std::to_string(compute_us)}}});
    group.bars.push_back(Bar{comm_us,
                             "#e15759",
                             false,
                             "comm",
                             "all-reduce: " + MsOfUs(comm_us) + " (" +
                                 Percent(row["comm_share"].get<double>()) + ")",
                             {{"data-kind", "communication"},
                              {"data-us", std::to_string(comm_us)}}});
    group.bars.push_back(Bar{
        exchange_us,
        "#f28e2b",
        false,
        "exchange",
        "parameter exchange: " + MsOfUs(exchange_us),
        {{"data-kind", "exchange"}, {"data-us", std::to_string(exchange_us)}}});
    chart.groups.push_back(std::move(group));
  }
  chart.legend = {
      LegendEntry{"median step", "#79706e", false, {{"data-kind", "step"}}},
      LegendEntry{"computation", "#4e79a7", false, {{"data-kind", "compute"}}},
      LegendEntry{"communication (all-reduce)",
                  "#e15759",
                  false,
                  {{"data-kind", "communication"}}},
      LegendEntry{"parameter exchange (ZeRO-1)",
                  "#f28e2b",
                  false,
                  {{"data-kind", "exchange"}}}};
  return RenderGroupedBars(chart);
}

}  // namespace

std::string SweepHtml(const std::string& title, const Json& sweep) {
  std::string warnings;
  for (const Json& warning : sweep["warnings"]) {
    warnings += "<p>" + EscapeXml(warning.get<std::string>()) + "</p>\n";
  }
  std::string body;
  if (!warnings.empty()) {
    body +=
        "<div class=\"warning\" id=\"unreliable\" role=\"alert\">\n"
        "<p><strong>Step times not comparable:</strong></p>\n" +
        warnings + "</div>\n";
  }
  body += "<section id=\"sweep-charts\">\n" + HtmlChart(SweepBytesSvg(sweep)) +
          HtmlChart(SweepTimeSvg(sweep)) + "</section>\n" +
          HtmlTable(SweepTable(sweep, /*warnings_as_notes=*/false));
  return HtmlPage(title, body);
}

}  // namespace memprof
