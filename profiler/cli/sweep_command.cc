#include "profiler/cli/sweep_command.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiler/base/atomic_file.h"
#include "profiler/base/category.h"
#include "profiler/base/errors.h"
#include "profiler/base/human_bytes.h"
#include "profiler/base/schema_version.h"
#include "profiler/base/statistics.h"
#include "profiler/cli/profile_child.h"
#include "profiler/report/report_html.h"
#include "profiler/report/report_markdown.h"
#include "profiler/report/report_text.h"
#include "profiler/report/summary.h"
#include "profiler/report/svg_chart.h"

namespace memprof {
namespace fs = std::filesystem;
namespace {

using Json = nlohmann::ordered_json;

// One world size's run: rank 0's report, and the directory the run wrote.
struct SweepPoint {
  int64_t world_size = 0;
  int64_t zero_stage = 0;
  std::string dir;
  RankReport rank0;
};

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

ReportTable SweepTable(const Json& sweep) {
  ReportTable table;
  table.id = "sweep";
  table.title = "Per rank, against the number of ranks";
  table.caption =
      "Global batch " + std::to_string(sweep["global_batch"].get<int64_t>()) +
      "; each category's bytes on one rank (its largest live bytes over a "
      "steady-state step; temporaries at the peak), then the median "
      "steady-state step, the time in the Reducer's all-reduces and, under "
      "ZeRO-1, in the parameter exchange after the optimizer step.";
  table.header = {"ranks", "ZeRO", "micro-batch"};
  for (Category c : kAllCategories) table.header.emplace_back(CategoryName(c));
  for (const char* h :
       {"peak", "step", "all-reduce", "exchange", "communication share"}) {
    table.header.emplace_back(h);
  }
  table.numeric.assign(table.header.size(), true);
  for (const Json& row : sweep["rows"]) {
    std::vector<std::string> cells = {
        std::to_string(row["world_size"].get<int64_t>()),
        std::to_string(row["zero_stage"].get<int64_t>()),
        std::to_string(row["micro_batch"].get<int64_t>())};
    for (Category c : kAllCategories) {
      cells.push_back(HumanBytes(
          row["bytes"][std::string(CategoryName(c))].get<int64_t>()));
    }
    cells.push_back(HumanBytes(row["peak_bytes"].get<int64_t>()));
    cells.push_back(Ms(row["step_seconds"].get<double>()));
    cells.push_back(Ms(row["comm_seconds"].get<double>()));
    cells.push_back(Ms(row["exchange_seconds"].get<double>()));
    cells.push_back(Percent(row["comm_share"].get<double>()));
    table.rows.push_back(cells);
  }
  table.notes.push_back(
      "Model state (weights, gradients, optimizer state, DDP buckets) is the "
      "same on every rank at every N; activations and inputs follow the "
      "per-rank micro-batch G/N; under ZeRO-1 the optimizer state is the "
      "rank's partition instead. All-reduce is the union of the "
      "Reducer's all-reduces, issue to completion, within each step (it "
      "overlaps backward's computation); exchange is ZeRO-1's broadcast of "
      "the updated parameters from their owners, first issue to last "
      "completion; the share is both over the step.");
  return table;
}

// "N=4", or "N=4 ZeRO-1" under stage 1.
std::string PointLabel(const Json& row) {
  return "N=" + std::to_string(row["world_size"].get<int64_t>()) +
         (row["zero_stage"].get<int64_t>() == 1 ? " ZeRO-1" : "");
}

std::string SweepTimeSvg(const Json& sweep) {
  GroupedBarChart chart;
  chart.id = "sweep-step-time";
  chart.title =
      "Median steady-state step: computation, all-reduce and parameter "
      "exchange";
  chart.y_title = "time (microseconds)";
  chart.y_units = Units::kCount;
  for (const Json& row : sweep["rows"]) {
    const int64_t n = row["world_size"].get<int64_t>();
    BarGroup group{
        PointLabel(row), {}, {{"data-world-size", std::to_string(n)}}};
    const int64_t step_us =
        static_cast<int64_t>(1e6 * row["step_seconds"].get<double>());
    const int64_t comm_us =
        static_cast<int64_t>(1e6 * row["comm_seconds"].get<double>());
    const int64_t exchange_us =
        static_cast<int64_t>(1e6 * row["exchange_seconds"].get<double>());
    const int64_t compute_us =
        std::max<int64_t>(0, step_us - comm_us - exchange_us);
    group.bars.push_back(Bar{
        compute_us,
        "#4e79a7",
        false,
        "compute",
        "computation: " + std::to_string(compute_us) + " us",
        {{"data-kind", "compute"}, {"data-us", std::to_string(compute_us)}}});
    group.bars.push_back(Bar{comm_us,
                             "#e15759",
                             false,
                             "comm",
                             "all-reduce: " + std::to_string(comm_us) +
                                 " us (" +
                                 Percent(row["comm_share"].get<double>()) + ")",
                             {{"data-kind", "communication"},
                              {"data-us", std::to_string(comm_us)}}});
    group.bars.push_back(Bar{
        exchange_us,
        "#f28e2b",
        false,
        "exchange",
        "parameter exchange: " + std::to_string(exchange_us) + " us",
        {{"data-kind", "exchange"}, {"data-us", std::to_string(exchange_us)}}});
    chart.groups.push_back(std::move(group));
  }
  chart.legend = {
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

// memprof.sweep/1: one row per world size, from rank 0's report.
Json SweepJson(int64_t global_batch, const std::vector<SweepPoint>& points) {
  Json rows = Json::array();
  for (const SweepPoint& point : points) {
    const RankReport& rank = point.rank0;
    Json bytes = Json::object();
    for (Category c : kAllCategories) {
      bytes[std::string(CategoryName(c))] = ComparedBytes(rank.Of(c), c);
    }
    std::vector<double> step, comm, exchange;
    for (const StepReport& s : rank.steps) {
      if (!s.steady_state) continue;
      step.push_back(s.seconds);
      comm.push_back(s.comm_seconds);
      exchange.push_back(s.exchange_seconds);
    }
    const double step_s = Median(step);
    const double comm_s = std::min(step_s, Median(comm));
    const double exchange_s = std::min(step_s - comm_s, Median(exchange));
    rows.push_back(
        Json{{"world_size", point.world_size},
             {"zero_stage", point.zero_stage},
             {"micro_batch", rank.micro_batch},
             {"bytes", bytes},
             {"peak_bytes", rank.peak.total_bytes},
             {"step_seconds", step_s},
             {"comm_seconds", comm_s},
             {"exchange_seconds", exchange_s},
             {"comm_share", step_s > 0 ? (comm_s + exchange_s) / step_s : 0.0},
             {"run", point.dir}});
  }
  return Json{
      {"schema", kSweepSchema}, {"global_batch", global_batch}, {"rows", rows}};
}

// Per-rank bytes by category against N, as inline SVG.
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

// Runs the config at world size `n`, micro-batch G/n, into OUT/ws-<n>/.
// Throws RunFailure unless the run succeeded and rank 0 wrote its report.
// At ZeRO stage `stage` (-1: the config's), into OUT/ws-<n>-zero-<s>/.
SweepPoint RunAt(const SweepArgs& args, int64_t n, int64_t stage) {
  ProfileChildRequest request;
  request.config_words = args.profile_words;
  request.world_size = n;
  request.global_batch = args.global_batch;
  request.zero_stage = stage;
  request.out_dir = (fs::path(args.out_dir) /
                     ("ws-" + std::to_string(n) +
                      (stage >= 0 ? "-zero-" + std::to_string(stage) : "")))
                        .string();
  std::cout << "memprof sweep: " << n << " rank" << (n == 1 ? "" : "s")
            << (stage >= 0 ? ", ZeRO stage " + std::to_string(stage) : "")
            << " at micro-batch " << args.global_batch / n << " -> "
            << request.out_dir << "\n"
            << std::flush;
  ProfileChildResult child = RunProfileChild(request);
  if (child.exit_code != kExitOk) {
    throw RunFailure("the run at world size " + std::to_string(n) +
                     " failed (exit " + std::to_string(child.exit_code) +
                     "); see " + child.log_path);
  }
  if (child.reports.empty() || child.reports.front().context.rank != 0) {
    throw RunFailure("the run at world size " + std::to_string(n) +
                     " wrote no report for rank 0; see " + child.log_path);
  }
  RankReport& rank0 = child.reports.front();
  return SweepPoint{n, rank0.context.config.ddp.zero_stage, request.out_dir,
                    std::move(rank0)};
}

}  // namespace

int RunSweepCommand(const SweepArgs& args) {
  // Each run writes in a directory of its own inside.
  CreateOutputDirectory("--out", args.out_dir, 2 * kLongestOutputName);
  std::vector<SweepPoint> points;
  const std::vector<int64_t> stages =
      args.zero_stages.empty() ? std::vector<int64_t>{-1} : args.zero_stages;
  for (int64_t n : args.world_sizes) {
    for (int64_t stage : stages) points.push_back(RunAt(args, n, stage));
  }
  const Json sweep = SweepJson(args.global_batch, points);
  const ReportTable table = SweepTable(sweep);
  ReportText text;
  text.title = "memprof sweep: " + args.config.model;
  text.tables = {table};
  const std::string bytes_svg = SweepBytesSvg(sweep);
  const fs::path out(args.out_dir);
  WriteFileAtomically((out / "sweep.json").string(), sweep.dump(2) + "\n");
  WriteFileAtomically((out / "sweep.md").string(), FormatReportMarkdown(text));
  WriteFileAtomically(
      (out / "sweep.svg").string(),
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" + bytes_svg);
  WriteFileAtomically(
      (out / "sweep.html").string(),
      HtmlPage(text.title, "<section id=\"sweep-charts\">\n" + bytes_svg +
                               SweepTimeSvg(sweep) + "</section>\n" +
                               HtmlTable(table)));
  std::cout << FormatReportMarkdown(text) << "sweep: " << args.out_dir
            << "/sweep.json, sweep.md, sweep.svg, sweep.html\n";
  return kExitOk;
}

}  // namespace memprof
