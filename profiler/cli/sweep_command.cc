#include "profiler/cli/sweep_command.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/config_validation.h"
#include "profiler/base/atomic_file.h"
#include "profiler/base/category.h"
#include "profiler/base/effective_config.h"
#include "profiler/base/errors.h"
#include "profiler/base/human_bytes.h"
#include "profiler/base/schema_version.h"
#include "profiler/base/statistics.h"
#include "profiler/cli/local_world_size.h"
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

// "The run at 4 ranks failed (exit 3; see D/ws-4.log); the rows above are
// the points that completed before it, and no later point ran."
std::string FailedSentence(const Json& sweep) {
  const Json& failed = sweep["failed"];
  const int64_t stage = failed["zero_stage"].get<int64_t>();
  const int64_t n = failed["world_size"].get<int64_t>();
  return "The run at " + std::to_string(n) + (n == 1 ? " rank" : " ranks") +
         (stage >= 0 ? ", ZeRO stage " + std::to_string(stage) : "") +
         " failed (exit " + std::to_string(failed["exit_code"].get<int>()) +
         "; see " + failed["log"].get<std::string>() +
         "); the rows above are the points that completed before it, and no "
         "later point ran.";
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
  for (const char* h : {"peak", "step", "step range", "all-reduce", "exchange",
                        "communication share"}) {
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
    cells.push_back(StepRange(row));
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
      "completion; the share is both over the step. The step range is the "
      "shortest and the longest steady-state step.");
  for (const Json& warning : sweep["warnings"]) {
    table.notes.push_back("Warning: " + warning.get<std::string>());
  }
  if (!sweep["failed"].is_null()) table.notes.push_back(FailedSentence(sweep));
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

// Note [Step-time spread]
// A sweep compares step times across world sizes, each the median of rank
// 0's steady-state steps. On a shared machine two identical runs' steps can
// differ several-fold, so each row also carries the shortest and longest
// of those steps and their spread, (max - min) / median. Above
// kUnreliableSpread the row's step time is flagged: a difference between
// points smaller than their own spread says nothing about N. More --steps
// give more steady-state steps, a steadier median and a truer spread.
constexpr double kUnreliableSpread = 0.25;

// The point that failed, and how.
struct SweepFailure {
  int64_t world_size = 0;
  int64_t zero_stage = -1;  // -1: the config's
  int exit_code = 0;
  std::string log_path;
};

// memprof.sweep/1.1: one row per point that ran, from rank 0's report; the
// warnings of Note [Step-time spread]; the point that failed, if one did.
Json SweepJson(int64_t global_batch, const std::vector<SweepPoint>& points,
               const std::optional<SweepFailure>& failure) {
  Json rows = Json::array();
  Json warnings = Json::array();
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
    const Spread spread = SpreadOf(step);
    const double step_s = spread.median;
    const double comm_s = std::min(step_s, Median(comm));
    const double exchange_s = std::min(step_s - comm_s, Median(exchange));
    Json row{{"world_size", point.world_size},
             {"zero_stage", point.zero_stage},
             {"micro_batch", rank.micro_batch},
             {"bytes", bytes},
             {"peak_bytes", rank.peak.total_bytes},
             {"step_seconds", step_s},
             {"steady_steps", spread.count},
             {"step_seconds_min", spread.min},
             {"step_seconds_max", spread.max},
             {"step_spread", spread.Relative()},
             {"comm_seconds", comm_s},
             {"exchange_seconds", exchange_s},
             {"comm_share", step_s > 0 ? (comm_s + exchange_s) / step_s : 0.0},
             {"run", point.dir}};
    if (spread.Relative() > kUnreliableSpread) {
      char spread_text[160];
      std::snprintf(spread_text, sizeof spread_text,
                    "%.2f to %.2f ms (a spread of %.0f%% of their median, "
                    "over %.0f%%)",
                    1e3 * spread.min, 1e3 * spread.max, 100 * spread.Relative(),
                    100 * kUnreliableSpread);
      warnings.push_back(
          PointLabel(row) + "'s steady-state steps took " + spread_text +
          ": its step time cannot be compared with the other points' "
          "(a difference smaller than the spread says nothing about N); "
          "rerun with more --steps on a quieter machine");
    }
    rows.push_back(std::move(row));
  }
  Json failed = nullptr;
  if (failure) {
    failed = Json{{"world_size", failure->world_size},
                  {"zero_stage", failure->zero_stage},
                  {"exit_code", failure->exit_code},
                  {"log", failure->log_path}};
  }
  return Json{{"schema", kSweepSchema},
              {"global_batch", global_batch},
              {"rows", rows},
              {"warnings", warnings},
              {"failed", failed}};
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

// The config of the point at world size `n`, micro-batch G/n, ZeRO stage
// `stage` (-1: the config's), as its `memprof profile` will read it.
RunConfig PointConfig(const SweepArgs& args, int64_t n, int64_t stage) {
  RunConfig config = args.config;
  config.ddp.world_size = n;
  config.train.global_batch = args.global_batch;
  if (stage >= 0) config.ddp.zero_stage = stage;
  return config;
}

// "N=4" or "N=4 ZeRO-1", before the point has a row.
std::string PointName(int64_t n, int64_t stage) {
  return "N=" + std::to_string(n) +
         (stage >= 0 ? " ZeRO-" + std::to_string(stage) : "");
}

// Every point is checked before any runs, as its `memprof profile` would
// check it, so that a sweep does not stop at its fourth point after three
// runs: InputError naming the point.
void CheckPoints(const SweepArgs& args, const std::vector<int64_t>& stages) {
  for (int64_t n : args.world_sizes) {
    for (int64_t stage : stages) {
      const RunConfig config = PointConfig(args, n, stage);
      try {
        ValidateRunConfig(config);
        if (n > 1) CheckLocalWorldSize(config);  // Note [Local world size]
        CheckLocalMemory(config, 0,
                         AvailableMemoryBytes());  // Note [Local memory]
      } catch (const InputError& e) {
        throw InputError("sweep: the point " + PointName(n, stage) +
                         " cannot run, so no point was run: " + e.what());
      }
    }
  }
}

// Runs the config at world size `n`, micro-batch G/n, into OUT/ws-<n>/ (at
// ZeRO stage `stage` >= 0, into OUT/ws-<n>-zero-<s>/). The point, or the
// failure when the run did not succeed or wrote no report for rank 0.
std::variant<SweepPoint, SweepFailure> RunAt(const SweepArgs& args, int64_t n,
                                             int64_t stage) {
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
  if (child.exit_code != kExitOk || child.reports.empty() ||
      child.reports.front().context.rank != 0) {
    return SweepFailure{
        n, stage, child.exit_code == kExitOk ? kExitRunFailed : child.exit_code,
        child.log_path};
  }
  RankReport& rank0 = child.reports.front();
  return SweepPoint{n, rank0.context.config.ddp.zero_stage, request.out_dir,
                    std::move(rank0)};
}

}  // namespace

int RunSweepCommand(const SweepArgs& args) {
  const std::vector<int64_t> stages =
      args.zero_stages.empty() ? std::vector<int64_t>{-1} : args.zero_stages;
  std::cout << FormatEffectiveConfig(args.config) << std::flush;
  CheckPoints(args, stages);
  // Each run writes in a directory of its own inside.
  CreateOutputDirectory("--out", args.out_dir, 2 * kLongestOutputName);
  std::vector<SweepPoint> points;
  std::optional<SweepFailure> failure;
  for (int64_t n : args.world_sizes) {
    for (int64_t stage : stages) {
      if (failure) break;
      auto result = RunAt(args, n, stage);
      if (auto* point = std::get_if<SweepPoint>(&result)) {
        points.push_back(std::move(*point));
      } else {
        failure = std::get<SweepFailure>(result);
      }
    }
  }
  // What completed is written even when a later point failed.
  const Json sweep = SweepJson(args.global_batch, points, failure);
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
  if (failure) {
    std::string sentence = FailedSentence(sweep);
    sentence[0] = 't';  // "The run at ..." as a clause after "sweep: "
    throw RunFailure("sweep: " + sentence + " The completed points are in " +
                     args.out_dir + "/sweep.json");
  }
  return kExitOk;
}

}  // namespace memprof
