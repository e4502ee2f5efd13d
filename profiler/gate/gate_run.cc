#include "profiler/gate/gate_run.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profiler/base/atomic_file.h"
#include "profiler/base/errors.h"
#include "profiler/base/regular_file.h"
#include "profiler/gate/regression_check.h"
#include "profiler/report/rank_outcome.h"
#include "profiler/report/report_text.h"
#include "profiler/report/run_files.h"
#include "profiler/report/run_reports.h"

namespace memprof {
namespace fs = std::filesystem;
namespace {

// Whether `a` and `b` name one directory, either or both not there yet
// ("out/n6/" and "out/n6" alike).
bool SamePath(const std::string& a, const std::string& b) {
  std::error_code error;
  auto normal = [&](const std::string& p) {
    fs::path path = fs::weakly_canonical(p, error).lexically_normal();
    return path.has_filename() ? path : path.parent_path();
  };
  return normal(a) == normal(b);
}

// The Markdown appended to $GITHUB_STEP_SUMMARY when it names a regular
// file (opened without blocking, so a FIFO there cannot hang the check, and
// not through a symbolic link), and not the baseline or one of the run's
// files, which appending would damage. The summary is a courtesy: when it
// cannot be appended, a warning says why and the verdict stands.
void AppendStepSummary(const std::string& markdown, const CheckOptions& options,
                       const std::string& run_dir) {
  const char* path = std::getenv("GITHUB_STEP_SUMMARY");
  if (path == nullptr || *path == '\0') return;
  const auto warn = [&](const std::string& why) {
    std::cerr << "memprof: warning: GITHUB_STEP_SUMMARY=" << path
              << ": the check's table was not appended: " << why
              << "; the verdict is unchanged\n";
  };
  std::error_code error;
  if (fs::equivalent(path, options.baseline_path, error)) {
    return warn("that is the baseline " + options.baseline_path);
  }
  try {
    RequireOutsideRun("GITHUB_STEP_SUMMARY", path, run_dir);
  } catch (const InputError&) {
    return warn("that is one of the run's files in " + run_dir);
  }
  const int fd = ::open(
      path, O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC,
      0644);
  if (fd < 0) return warn(std::strerror(errno));
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    return warn("not a regular file");
  }
  const std::string text = markdown + "\n";
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string reason = std::strerror(errno);
      ::close(fd);
      return warn(reason);
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) warn(std::strerror(errno));
}

}  // namespace

Baseline LoadBaseline(const std::string& path) {
  return ParseBaseline(
      ReadRegularFile(path, "baseline", kMaxBaselineBytes,
                      "pass a baseline written by 'memprof baseline --run DIR "
                      "--out FILE'"),
      path);
}

RunFigures LoadRun(const std::string& dir) {
  RequireRunDirectory(dir);
  std::error_code error;
  const std::string first = RankReportPath(dir, 0);
  if (!fs::exists(first, error)) {
    RequireRecoveredReport(dir, 0);
    throw InputError("--run " + dir +
                     ": no rank-0.json; pass the --out directory of a "
                     "finished 'memprof profile'");
  }
  std::vector<RankReport> ranks = {ReadRankReport(first)};
  std::vector<std::string> origins = {first};
  const int world_size = ranks[0].context.world_size;
  // A rank report past the run's ranks is another run's (copied in, or
  // left by a run of more ranks): `report` sets it aside, check refuses
  // the directory rather than gate a mix.
  for (const auto& [rank, path] : RankReportFiles(dir)) {
    if (rank < world_size) continue;
    throw InputError(path + ": a rank report past the run's " +
                     std::to_string(world_size) + " rank(s) (world_size in " +
                     first +
                     "): the directory mixes runs; remove it, or profile "
                     "into a fresh --out directory");
  }
  int missing = -1;  // the first rank without a report
  for (int rank = 1; rank < world_size; ++rank) {
    const std::string path = RankReportPath(dir, rank);
    if (!fs::exists(path, error)) {
      RequireRecoveredReport(dir, rank);
      if (missing < 0) missing = rank;
      continue;
    }
    ranks.push_back(ReadRankReport(path));
    origins.push_back(path);
  }
  RequireFinishedRun(ranks, dir);
  RequireSteadyState(ranks, dir);
  if (missing >= 0) {
    throw InputError(RankReportPath(dir, missing) + ": missing (world_size " +
                     std::to_string(world_size) + " in " + first +
                     "); did every rank finish? rerun 'memprof profile "
                     "--out " +
                     dir + "'");
  }
  std::vector<RankReportFigures> reports;
  for (size_t i = 0; i < ranks.size(); ++i) {
    reports.push_back(FiguresOf(ranks[i], origins[i]));
  }
  return CombineRankReports(reports, origins);
}

void RequireFinishedRun(const std::vector<RankReport>& ranks,
                        const std::string& dir) {
  std::string reasons;
  bool out_of_memory = false;
  for (const RankReport& rank : ranks) {
    const std::string reason = UnfinishedReason(rank);
    if (reason.empty()) continue;
    reasons += (reasons.empty() ? "" : "; ") + std::string("rank ") +
               std::to_string(rank.context.rank) + " " + reason;
    if (rank.out_of_memory) {
      reasons += " (" + OutOfMemoryMessage(*rank.out_of_memory) + ")";
    }
    out_of_memory = out_of_memory || rank.out_of_memory.has_value();
  }
  if (reasons.empty()) return;
  throw RunFailure(
      "--run " + dir + ": " + reasons +
      ". A failed run has no figures to gate or to keep as a baseline; " +
      (out_of_memory
           ? "make it fit (its report.md gives the verdict and the levers; "
             "'memprof fit' tries them)"
           : "find why it stopped (its report.md)") +
      ", profile it again to the end, and gate that run");
}

void RequireSteadyState(const std::vector<RankReport>& ranks,
                        const std::string& dir) {
  for (const RankReport& rank : ranks) {
    if (ReachedSteadyState(rank)) continue;
    const int64_t ran = static_cast<int64_t>(rank.steps.size());
    throw InputError(
        "--run " + dir + ": rank " + std::to_string(rank.context.rank) +
        " ran " + std::to_string(ran) + (ran == 1 ? " step" : " steps") +
        ", and its steady state begins at step " +
        std::to_string(rank.steady_from) + " (" + OneTimeSteps(rank) +
        "): figures without a steady-state step are not a step's to gate or "
        "keep as a baseline; run at least " +
        std::to_string(rank.steady_from) + " steps and gate that run");
  }
}

RunFigures RunFromReports(const std::vector<RankReport>& ranks,
                          const std::string& dir) {
  std::vector<RankReportFigures> reports;
  std::vector<std::string> origins;
  for (const RankReport& rank : ranks) {
    origins.push_back(RankReportPath(dir, rank.context.rank));
    reports.push_back(FiguresOf(rank, origins.back()));
  }
  return CombineRankReports(reports, origins);
}

void PrepareCheckOutputs(const CheckOptions& options,
                         const std::string& run_dir) {
  const std::pair<const char*, const std::string*> outputs[] = {
      {"--markdown", &options.markdown_path}, {"--json", &options.json_path}};
  if (!options.markdown_path.empty() &&
      options.markdown_path == options.json_path) {
    throw InputError("--markdown and --json both name " +
                     options.markdown_path +
                     ": the JSON would replace the Markdown; give each its "
                     "own path");
  }
  for (const auto& [flag, path] : outputs) {
    if (!path->empty()) RequireOutsideRun(flag, *path, run_dir);
  }
  for (const auto& [flag, path] : outputs) {
    if (path->empty()) continue;
    std::error_code error;
    if (fs::is_directory(*path, error)) {
      throw InputError(
          std::string(flag) + " " + *path +
          ": a directory; give a file's path (" + *path +
          (std::string(flag) == "--json" ? "/check.json)" : "/check.md)"));
    }
    RequireReplaceableFile(flag, *path);
    const fs::path parent = fs::path(*path).parent_path();
    const std::string dir = parent.empty() ? "." : parent.string();
    const bool is_directory = fs::is_directory(dir, error);
    const bool in_run = !is_directory && SamePath(dir, run_dir);
    if (!in_run && (!is_directory || ::access(dir.c_str(), W_OK) != 0)) {
      throw InputError(std::string(flag) + " " + *path + ": its directory '" +
                       dir + "' " +
                       (is_directory ? "is not writable" : "does not exist") +
                       "; create it or choose another path");
    }
    if (fs::equivalent(*path, options.baseline_path, error)) {
      throw InputError(std::string(flag) + " " + *path +
                       ": that is the baseline the run is checked against, "
                       "which memprof would overwrite; choose another path");
    }
  }
  for (const auto& [flag, path] : outputs) {
    std::error_code error;
    if (!path->empty() && !fs::remove(*path, error) && error) {
      throw InputError(std::string(flag) + " " + *path +
                       ": cannot remove the earlier check's file: " +
                       error.message() + "; choose a writable path");
    }
  }
}

int GateRun(const Baseline& baseline, const RunFigures& run,
            const std::string& run_dir, const CheckOptions& options) {
  const CheckReport report =
      CompareWithBaseline(baseline, options.baseline_path, run, run_dir,
                          options.tolerances, options.allow_config_change);
  std::cout << FormatCheckTable(report, options.only_changed);
  if (options.strict && report.regressed == 0 && report.improved > 0) {
    std::cout << "FAILED (--strict): " << report.improved
              << " figure(s) shrank beyond their tolerance\n";
  }
  std::cout << std::flush;
  const std::string markdown =
      FormatCheckMarkdown(report, options.only_changed);
  if (!options.markdown_path.empty()) {
    WriteFlaggedFile("--markdown", options.markdown_path, markdown);
  }
  if (!options.json_path.empty()) {
    WriteFlaggedFile("--json", options.json_path,
                     CheckReportToJson(report).dump(2) + "\n");
  }
  AppendStepSummary(markdown, options, run_dir);
  return CheckExitCode(report, options.strict);
}

}  // namespace memprof
