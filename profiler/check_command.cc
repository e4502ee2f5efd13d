#include "profiler/check_command.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "profiler/atomic_file.h"
#include "profiler/errors.h"
#include "profiler/regression_check.h"
#include "profiler/run_reports.h"

namespace memprof {
namespace fs = std::filesystem;
namespace {

std::string ReadFile(const std::string& path, const std::string& remedy) {
  std::error_code error;
  if (fs::is_directory(path, error)) {
    throw InputError("cannot read '" + path + "': it is a directory; " +
                     remedy);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw InputError("cannot read '" + path + "': " + std::strerror(errno) +
                     "; " + remedy);
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    throw InputError("cannot read '" + path + "': read error; " + remedy);
  }
  return text.str();
}

std::string RankFile(const std::string& dir, int rank) {
  return (fs::path(dir) / ("rank-" + std::to_string(rank) + ".json")).string();
}

void WriteOutput(const char* flag, const std::string& path,
                 const std::string& text) {
  try {
    WriteFileAtomically(path, text);
  } catch (const std::runtime_error& e) {
    throw InputError(std::string(flag) + ": " + e.what() +
                     "; choose a writable path");
  }
}

void AppendStepSummary(const std::string& markdown) {
  const char* path = std::getenv("GITHUB_STEP_SUMMARY");
  if (path == nullptr || *path == '\0') return;
  std::ofstream out(path, std::ios::app);
  out << markdown << "\n";
  out.flush();
  if (!out) {
    throw InputError(
        std::string("GITHUB_STEP_SUMMARY=") + path +
        ": cannot append the check's table: " + std::strerror(errno));
  }
}

}  // namespace

Baseline LoadBaseline(const std::string& path) {
  return ParseBaseline(
      ReadFile(path,
               "pass a baseline written by 'memprof baseline --run DIR --out "
               "FILE'"),
      path);
}

RunFigures LoadRun(const std::string& dir) {
  RequireRunDirectory(dir);
  std::error_code error;
  const std::string first = RankFile(dir, 0);
  if (!fs::exists(first, error)) {
    throw InputError("--run " + dir +
                     ": no rank-0.json; pass the --out directory of a "
                     "finished 'memprof profile'");
  }
  const std::string remedy = "rerun 'memprof profile --out " + dir + "'";
  std::vector<RankReportFigures> reports = {
      ParseRankReport(ReadFile(first, remedy), first)};
  std::vector<std::string> origins = {first};
  const int world_size = reports[0].context.world_size;
  for (int rank = 1; rank < world_size; ++rank) {
    const std::string path = RankFile(dir, rank);
    if (!fs::exists(path, error)) {
      throw InputError(path + ": missing (world_size " +
                       std::to_string(world_size) + " in " + first +
                       "); did every rank finish? " + remedy);
    }
    reports.push_back(ParseRankReport(ReadFile(path, remedy), path));
    origins.push_back(path);
  }
  return CombineRankReports(reports, origins);
}

RunFigures RunFromReportTexts(const std::vector<std::string>& texts,
                              const std::string& dir) {
  std::vector<RankReportFigures> reports;
  std::vector<std::string> origins;
  for (size_t i = 0; i < texts.size(); ++i) {
    origins.push_back(RankFile(dir, static_cast<int>(i)));
    reports.push_back(ParseRankReport(texts[i], origins.back()));
  }
  return CombineRankReports(reports, origins);
}

int GateRun(const Baseline& baseline, const RunFigures& run,
            const std::string& run_dir, const CheckOptions& options) {
  const CheckReport report =
      CompareWithBaseline(baseline, options.baseline_path, run, run_dir,
                          options.tolerances, options.allow_config_change);
  std::cout << FormatCheckTable(report) << std::flush;
  const std::string markdown = FormatCheckMarkdown(report);
  if (!options.markdown_path.empty()) {
    WriteOutput("--markdown", options.markdown_path, markdown);
  }
  if (!options.json_path.empty()) {
    WriteOutput("--json", options.json_path,
                CheckReportToJson(report).dump(2) + "\n");
  }
  AppendStepSummary(markdown);
  return CheckExitCode(report, options.strict);
}

int RunCheckCommand(const CheckArgs& args) {
  const Baseline baseline = LoadBaseline(args.check.baseline_path);
  const RunFigures run = LoadRun(args.run_dir);
  return GateRun(baseline, run, args.run_dir, args.check);
}

int RunBaselineCommand(const BaselineArgs& args) {
  Baseline baseline;
  baseline.run = LoadRun(args.run_dir);
  baseline.tolerances = args.tolerances;
  WriteOutput("--out", args.out_path, BaselineToJson(baseline).dump(2) + "\n");
  const RunContext& c = baseline.run.context;
  std::cout << "memprof baseline: wrote " << args.out_path << " from "
            << args.run_dir << ": " << c.world_size << " rank"
            << (c.world_size == 1 ? "" : "s") << ", " << c.parameters
            << " parameters, steady-state peak of rank 0 "
            << baseline.run.ranks[0].peak_total_bytes << " B\n";
  return kExitOk;
}

}  // namespace memprof
