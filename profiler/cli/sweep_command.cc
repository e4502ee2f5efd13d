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
#include "profiler/base/schema_version.h"
#include "profiler/base/statistics.h"
#include "profiler/cli/local_world_size.h"
#include "profiler/cli/profile_child.h"
#include "profiler/report/report_markdown.h"
#include "profiler/report/report_text.h"
#include "profiler/report/summary.h"
#include "profiler/report/sweep_page.h"

namespace memprof {
namespace fs = std::filesystem;
namespace {

using Json = nlohmann::ordered_json;

// One world size's run: rank 0's report, and the directory the run wrote.
struct SweepPoint {
  int64_t world_size = 0;
  int64_t zero_stage = 0;
  int64_t grad_accum = 1;
  std::string dir;
  RankReport rank0;
};

// The point that failed, and how.
struct SweepFailure {
  int64_t world_size = 0;
  int64_t zero_stage = -1;  // -1: the config's
  int64_t grad_accum = 0;   // 0: the config's
  int exit_code = 0;
  std::string log_path;
};

// memprof.sweep/1.2: one row per point that ran, from rank 0's report; the
// warnings of Note [Step-time spread] (profiler/report/sweep_page.h); the point
// that failed, if one did.
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
             {"grad_accum", point.grad_accum},
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
                  {"grad_accum", failure->grad_accum},
                  {"exit_code", failure->exit_code},
                  {"log", failure->log_path}};
  }
  return Json{{"schema", kSweepSchema},
              {"global_batch", global_batch},
              {"rows", rows},
              {"warnings", warnings},
              {"failed", failed}};
}

// One point of the sweep before it runs: world size, ZeRO stage (-1: the
// config's) and accumulation (0: the config's).
struct PointSpec {
  int64_t world_size = 1;
  int64_t zero_stage = -1;
  int64_t grad_accum = 0;
};

// The config of a point, micro-batch G/(N K), as its `memprof profile`
// will read it.
RunConfig PointConfig(const SweepArgs& args, const PointSpec& point) {
  RunConfig config = args.config;
  config.ddp.world_size = point.world_size;
  config.train.global_batch = args.global_batch;
  if (point.zero_stage >= 0) config.ddp.zero_stage = point.zero_stage;
  if (point.grad_accum > 0) config.train.grad_accum = point.grad_accum;
  return config;
}

// "N=4", "N=4 ZeRO-1" or "N=4 K=8", before the point has a row.
std::string PointName(const PointSpec& point) {
  return "N=" + std::to_string(point.world_size) +
         (point.zero_stage >= 0 ? " ZeRO-" + std::to_string(point.zero_stage)
                                : "") +
         (point.grad_accum > 0 ? " K=" + std::to_string(point.grad_accum) : "");
}

// Every point, world size outermost, then ZeRO stage, then accumulation.
std::vector<PointSpec> PointsOf(const SweepArgs& args) {
  const std::vector<int64_t> stages =
      args.zero_stages.empty() ? std::vector<int64_t>{-1} : args.zero_stages;
  const std::vector<int64_t> accums =
      args.grad_accums.empty() ? std::vector<int64_t>{0} : args.grad_accums;
  std::vector<PointSpec> points;
  for (int64_t n : args.world_sizes) {
    for (int64_t stage : stages) {
      for (int64_t k : accums) points.push_back({n, stage, k});
    }
  }
  return points;
}

// Every point is checked before any runs, as its `memprof profile` would
// check it, so that a sweep does not stop at its fourth point after three
// runs: InputError naming the point.
void CheckPoints(const SweepArgs& args) {
  for (const PointSpec& point : PointsOf(args)) {
    const RunConfig config = PointConfig(args, point);
    try {
      ValidateRunConfig(config);
      if (point.world_size > 1) {
        CheckLocalWorldSize(config);  // Note [Local world size]
      }
      CheckLocalMemory(config, 0,
                       AvailableMemoryBytes());  // Note [Local memory]
    } catch (const InputError& e) {
      throw InputError("sweep: the point " + PointName(point) +
                       " cannot run, so no point was run: " + e.what());
    }
  }
}

// Runs the config at a point, micro-batch G/(N K), into OUT/ws-<n>/ (at
// ZeRO stage s, OUT/ws-<n>-zero-<s>/; at accumulation K, with -accum-<K>
// after it). The point, or the failure when the run did not succeed or
// wrote no report for rank 0.
std::variant<SweepPoint, SweepFailure> RunAt(const SweepArgs& args,
                                             const PointSpec& point) {
  const int64_t n = point.world_size, stage = point.zero_stage;
  const int64_t k = point.grad_accum;
  ProfileChildRequest request;
  request.config_words = args.profile_words;
  request.world_size = n;
  request.global_batch = args.global_batch;
  request.zero_stage = stage;
  request.grad_accum = k;
  request.out_dir = (fs::path(args.out_dir) /
                     ("ws-" + std::to_string(n) +
                      (stage >= 0 ? "-zero-" + std::to_string(stage) : "") +
                      (k > 0 ? "-accum-" + std::to_string(k) : "")))
                        .string();
  std::cout << "memprof sweep: " << n << " rank" << (n == 1 ? "" : "s")
            << (stage >= 0 ? ", ZeRO stage " + std::to_string(stage) : "")
            << (k > 0 ? ", " + std::to_string(k) + " micro-batches per step"
                      : "")
            << " at micro-batch " << MicroBatch(PointConfig(args, point))
            << " -> " << request.out_dir << "\n"
            << std::flush;
  ProfileChildResult child = RunProfileChild(request);
  if (child.exit_code != kExitOk || child.reports.empty() ||
      child.reports.front().context.rank != 0) {
    return SweepFailure{
        n, stage, k,
        child.exit_code == kExitOk ? kExitRunFailed : child.exit_code,
        child.log_path};
  }
  RankReport& rank0 = child.reports.front();
  const int64_t grad_accum = rank0.context.config.train.grad_accum;
  return SweepPoint{n, rank0.context.config.ddp.zero_stage, grad_accum,
                    request.out_dir, std::move(rank0)};
}

}  // namespace

int RunSweepCommand(const SweepArgs& args) {
  std::cout << FormatEffectiveConfig(args.config) << std::flush;
  CheckPoints(args);
  // Each run writes in a directory of its own inside.
  CreateOutputDirectory("--out", args.out_dir, 2 * kLongestOutputName);
  std::vector<SweepPoint> points;
  std::optional<SweepFailure> failure;
  for (const PointSpec& spec : PointsOf(args)) {
    if (failure) break;
    auto result = RunAt(args, spec);
    if (auto* point = std::get_if<SweepPoint>(&result)) {
      points.push_back(std::move(*point));
    } else {
      failure = std::get<SweepFailure>(result);
    }
  }
  // What completed is written even when a later point failed.
  const Json sweep = SweepJson(args.global_batch, points, failure);
  const ReportTable table = SweepTable(sweep, /*warnings_as_notes=*/true);
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
  WriteFileAtomically((out / "sweep.html").string(),
                      SweepHtml(text.title, sweep));
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
