#include "profiler/report/run_files.h"

#include <filesystem>
#include <regex>

#include "profiler/base/errors.h"

namespace memprof {
namespace fs = std::filesystem;

bool IsRunFileName(const std::string& name) {
  static const std::regex kPerRank(
      "rank-[0-9]+\\.json|snapshot-[0-9]+\\.(json|pickle)|capture-[0-9]+\\."
      "bin");
  return std::regex_match(name, kPerRank) || name == "summary.json" ||
         name == "report.md" || name == "report.html" || name == "trace.json";
}

std::map<int, std::string> RankReportFiles(const std::string& dir) {
  static const std::regex kRankFile("rank-(0|[1-9][0-9]{0,5})\\.json");
  std::map<int, std::string> files;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    std::smatch match;
    const std::string name = entry.path().filename().string();
    if (std::regex_match(name, match, kRankFile)) {
      files[std::stoi(match[1].str())] = entry.path().string();
    }
  }
  return files;
}

void RequireRecoveredReport(const std::string& dir, int rank) {
  const std::string r = std::to_string(rank);
  std::error_code error;
  const bool capture =
      fs::exists(fs::path(dir) / ("capture-" + r + ".bin"), error);
  if (error) {
    throw InputError("--run " + dir + ": cannot read it: " + error.message());
  }
  if (!capture) return;
  const std::string stopped = "no rank-" + r + ".json, but capture-" + r +
                              ".bin: the run stopped before rank " + r +
                              " wrote its report (killed, or out of disk)";
  throw RunFailure("--run " + dir + ": " + stopped +
                   ". A failed run has no figures to gate or to keep as a "
                   "baseline; 'memprof report --run " +
                   dir +
                   "' recovers its reports from the capture and says why it "
                   "stopped");
}

void RequireOutsideRun(const std::string& flag, const std::string& path,
                       const std::string& run_dir) {
  auto refuse = [&](const fs::path& file) {
    throw InputError(flag + " " + path + ": that is " + file.string() +
                     " of the run in " + run_dir +
                     ", which memprof would overwrite; choose a path outside "
                     "the run's files");
  };
  std::error_code target_error, run_error;
  const fs::path target = fs::weakly_canonical(path, target_error);
  const fs::path run = fs::weakly_canonical(run_dir, run_error);
  if (!target_error && !run_error && target.parent_path() == run &&
      IsRunFileName(target.filename().string())) {
    refuse(fs::path(run_dir) / target.filename());
  }
  // A hard link to one of them.
  std::error_code error;
  if (!fs::exists(path, error)) return;
  for (fs::directory_iterator it(run_dir, error), end; !error && it != end;
       it.increment(error)) {
    const std::string name = it->path().filename().string();
    std::error_code same_error;
    if (IsRunFileName(name) && fs::equivalent(path, it->path(), same_error)) {
      refuse(it->path());
    }
  }
}

}  // namespace memprof
