#include "profiler/session/run_outputs.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <ostream>
#include <streambuf>

#include "profiler/base/atomic_file.h"
#include "profiler/base/errors.h"
#include "profiler/capture/capture_file.h"
#include "profiler/report/report_text.h"
#include "profiler/report/run_files.h"
#include "profiler/report/run_reports.h"
#include "profiler/report/summary.h"
#include "profiler/session/program_meta.h"

namespace memprof {
namespace fs = std::filesystem;

namespace {

// Standard output, or nothing (RunOutputOptions::quiet).
class NullBuffer : public std::streambuf {
 protected:
  int overflow(int c) override { return c; }
};

void Write(const fs::path& path, const std::string& text) {
  try {
    WriteFileAtomically(path.string(), text);
  } catch (const std::runtime_error& e) {
    throw RunFailure(e.what());
  }
}

// A job of one that ran out of memory renders its reports, the
// out-of-memory first (before the first step too: the model state at the
// refusal and the verdict); in a larger job the peers are mid-step: nothing
// more is exchanged (the launcher renders what the ranks wrote once it has
// stopped them; under an external one, `memprof report` does).
[[noreturn]] void ThrowOutOfMemory(RankReport report,
                                   const std::string& out_dir, int world_size,
                                   std::ostream& out) {
  const std::string line = OutOfMemorySentence(*report.out_of_memory) +
                           "; see " +
                           RankReportPath(out_dir, report.context.rank);
  if (world_size == 1) {
    std::vector<RankReport> ranks;
    ranks.push_back(std::move(report));
    RenderRunReports(RunViewOf(out_dir, std::move(ranks)), out, std::cerr);
  }
  throw RunFailure(line);
}

// Rank 0: the summary and the reports of every rank's report.
void RenderAll(std::vector<RankReport> ranks, const std::string& out_dir,
               std::ostream& out) {
  Write(fs::path(out_dir) / "summary.json", SummaryJson(ranks).dump(2) + "\n");
  out << FormatSummaryTable(ranks);
  try {
    RenderRunReports(RunViewOf(out_dir, std::move(ranks)), out, std::cerr);
  } catch (const InputError& e) {
    throw RunFailure(e.what());
  }
}

}  // namespace

std::vector<RankReport> WriteRunOutputs(const RankRun& run,
                                        const RunOutputOptions& options) {
  NullBuffer null_buffer;
  std::ostream null_stream(&null_buffer);
  std::ostream& out = options.quiet ? null_stream : std::cout;
  const auto written_from = std::chrono::steady_clock::now();
  RankReport report = ReportOf(run);
  const std::string rank_path = RankReportPath(options.out_dir, run.rank);
  try {
    WriteRankReport(report, rank_path);
  } catch (const std::runtime_error& e) {
    throw RunFailure(e.what());
  }
  // The report is written: the capture is needed only for a post-mortem
  // (Note [Post-mortem]).
  fs::remove(CapturePath(options.out_dir, run.rank));
  fs::remove(ProgramMetaPath(CapturePath(options.out_dir, run.rank)));
  fs::remove(ProgramEndingPath(CapturePath(options.out_dir, run.rank)));
  if (report.out_of_memory) {
    ThrowOutOfMemory(std::move(report), options.out_dir, run.world_size, out);
  }
  if (run.world_size > 1 && !options.all_gather) {
    // A program that tracked no process group: each rank has written its
    // own report; the summary waits for `memprof report`.
    if (run.rank == 0) {
      out << "reports: " << rank_path
          << " (no process group tracked: run `memprof report "
          << options.out_dir
          << "` once every rank has finished, or track the program's "
             "group to have rank 0 gather them)\n"
          << std::flush;
    }
    return {report};
  }
  // Rank 0 gets every report through the group, so the summary needs no
  // shared filesystem; it parses each of the others once, with the one
  // reader, and keeps its own (a job of one gathers nothing).
  const std::vector<std::string> all =
      run.world_size == 1 ? std::vector<std::string>{}
                          : options.all_gather(ReadRankReportText(rank_path));
  if (run.rank != 0) return {report};
  std::vector<RankReport> ranks;
  ranks.push_back(std::move(report));
  for (size_t r = 1; r < all.size(); ++r) {
    const std::string origin =
        "rank " + std::to_string(r) + "'s report (gathered)";
    try {
      ranks.push_back(ParseRankReport(all[r], origin));
    } catch (const InputError& e) {
      throw RunFailure(e.what());  // the writer and the reader disagree: a bug
    }
  }
  if (options.no_hook) {
    out << FormatStepTimes(ranks.front()) << "reports: " << options.out_dir
        << "/ (--no-hook: step times only)\n"
        << std::flush;
    return ranks;
  }
  RenderAll(ranks, options.out_dir, out);
  // What the outputs cost against the training they describe (rank 0):
  // reading the capture is linear in its records, writing in the bytes.
  double trained = 0;
  for (const StepReport& step : ranks.front().steps) trained += step.seconds;
  const double written = std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - written_from)
                             .count();
  char line[256];
  std::snprintf(
      line, sizeof line,
      "outputs: %.2f s reading the capture (%lld records) and writing the "
      "snapshot, %.2f s writing the reports (training: %.2f s over %zu "
      "steps)\n",
      run.analysis_seconds, static_cast<long long>(run.analysis.records),
      written, trained, ranks.front().steps.size());
  out << line << std::flush;
  return ranks;
}

}  // namespace memprof
