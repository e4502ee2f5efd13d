#include "profiler/report/run_reports.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>

#include "profiler/base/atomic_file.h"
#include "profiler/base/errors.h"
#include "profiler/report/chrome_trace.h"
#include "profiler/report/report_html.h"
#include "profiler/report/report_markdown.h"
#include "profiler/report/report_text.h"
#include "profiler/report/run_files.h"

namespace memprof {
namespace fs = std::filesystem;
namespace {

// An error about `path` without the path in front: the problem names it.
std::string ReasonAbout(const std::string& path, const std::string& message) {
  const std::string prefix = path + ": ";
  return message.compare(0, prefix.size(), prefix) == 0
             ? message.substr(prefix.size())
             : message;
}

}  // namespace

RunView RunViewOf(const std::string& dir, std::vector<RankReport> ranks) {
  RunView view;
  view.dir = dir;
  view.world_size = static_cast<int>(ranks.size());
  view.ranks = std::move(ranks);
  return view;
}

void RequireRunDirectory(const std::string& dir) {
  std::error_code error;
  if (!fs::is_directory(dir, error)) {
    throw InputError(
        "--run " + dir + ": " +
        (fs::exists(dir, error) ? "not a directory" : "no such directory") +
        "; pass the --out directory of 'memprof profile'");
  }
}

RunView LoadRunView(const std::string& dir) {
  RequireRunDirectory(dir);
  std::map<int, std::string> files = RankReportFiles(dir);
  if (files.empty()) {
    throw InputError("--run " + dir +
                     ": no rank-<r>.json; pass the --out directory of "
                     "'memprof profile'");
  }

  RunView view;
  view.dir = dir;
  std::map<int, RankReport> good;
  std::vector<RankFileProblem> problems;
  for (const auto& [rank, path] : files) {
    try {
      RankReport report = ReadRankReport(path);
      RequireMemoryFigures(report, path);
      if (report.context.rank != rank) {
        throw InputError(
            path + ": context.rank is " + std::to_string(report.context.rank) +
            ", but the file is rank " + std::to_string(rank) + "'s");
      }
      good.emplace(rank, std::move(report));
    } catch (const InputError& e) {
      problems.push_back(
          RankFileProblem{rank, path, ReasonAbout(path, e.what())});
    }
  }
  for (const auto& [rank, report] : good) {
    view.world_size = std::max(view.world_size, report.context.world_size);
  }
  if (good.empty()) {
    std::string message = "--run " + dir + ": no usable rank report:";
    for (const RankFileProblem& p : problems) {
      message += "\n  " + p.path + ": " + p.reason;
    }
    throw InputError(message + "\nrerun 'memprof profile --out " + dir + "'");
  }
  for (int rank = 0; rank < view.world_size; ++rank) {
    if (files.count(rank) == 0) {
      problems.push_back(
          RankFileProblem{rank, RankReportPath(dir, rank), "missing"});
    }
  }
  for (auto it = good.begin(); it != good.end();) {
    const int size = it->second.context.world_size;
    if (it->first >= view.world_size || size != view.world_size) {
      problems.push_back(
          RankFileProblem{it->first, files[it->first],
                          "context.world_size is " + std::to_string(size) +
                              ", but the run has " +
                              std::to_string(view.world_size) + " ranks"});
      it = good.erase(it);
    } else {
      ++it;
    }
  }
  // A report of another run (a file copied in, a run profiled over another
  // with fewer ranks left behind): its figures are not this run's.
  if (!good.empty()) {
    const auto& [first_rank, first] = *good.begin();
    const nlohmann::json config = ToJson(first.context.config);
    for (auto it = std::next(good.begin()); it != good.end();) {
      const RankReport& other = it->second;
      if (ToJson(other.context.config) != config ||
          other.context.device != first.context.device ||
          other.context.libtorch_version != first.context.libtorch_version ||
          other.parameters != first.parameters) {
        problems.push_back(RankFileProblem{
            it->first, files[it->first],
            "its context (config, device, libtorch, parameters) differs from " +
                files[first_rank] +
                "'s: the directory mixes runs; profile into a fresh --out "
                "directory"});
        it = good.erase(it);
      } else {
        ++it;
      }
    }
  }
  std::sort(problems.begin(), problems.end(),
            [](const RankFileProblem& a, const RankFileProblem& b) {
              return a.rank < b.rank;
            });
  for (auto& [rank, report] : good) view.ranks.push_back(std::move(report));
  view.problems = std::move(problems);
  return view;
}

void WriteRunReports(const RunView& view) {
  const ReportText text = BuildReportText(view);
  const fs::path dir(view.dir);
  WriteFileAtomically((dir / "report.md").string(), FormatReportMarkdown(text));
  WriteFileAtomically((dir / "report.html").string(),
                      FormatReportHtml(view, text));
  WriteFileAtomically((dir / "trace.json").string(),
                      ChromeTraceJson(view).dump() + "\n");
}

int RenderRunReports(const RunView& view, std::ostream& out,
                     std::ostream& err) {
  try {
    WriteRunReports(view);
  } catch (const std::runtime_error& e) {
    // The rank reports are whole (written first, each atomically): once
    // there is room, the three files can be rendered from them.
    const std::string what = e.what();
    const bool full = what.find(std::strerror(ENOSPC)) != std::string::npos ||
                      what.find(std::strerror(EDQUOT)) != std::string::npos;
    // A full disk's remedy is in the reason already (WriteFailureReason).
    throw InputError(what + (full ? "" : "; make " + view.dir + " writable") +
                     ", then 'memprof report --run " + view.dir +
                     "' writes them from the rank reports");
  }
  for (const RankFileProblem& problem : view.problems) {
    err << "memprof: rank " << problem.rank << ": " << problem.path << ": "
        << problem.reason << "\n";
  }
  out << "reports: " << view.dir << "/report.md, report.html, trace.json";
  if (static_cast<int>(view.ranks.size()) < view.world_size) {
    out << " (incomplete: " << view.ranks.size() << " of " << view.world_size
        << " ranks)";
  } else if (!view.complete()) {
    out << " (every rank; " << view.problems.size()
        << " rank file(s) set aside as not this run's)";
  }
  out << "\n" << std::flush;
  return view.complete() ? kExitOk : kExitBadInput;
}

}  // namespace memprof
