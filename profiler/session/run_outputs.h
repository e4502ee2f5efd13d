// A rank's outputs from its run, written the same way for `memprof profile`
// and for a program's memprof::Session: rank-<r>.json on every rank, then
// on rank 0 (which gathers every rank's report through the process group,
// so no shared filesystem is needed) summary.json, report.md, report.html,
// trace.json and the tables on standard output.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "profiler/report/rank_report.h"
#include "profiler/session/rank_run.h"

namespace memprof {

struct RunOutputOptions {
  std::string out_dir;
  // Collective: every rank's string, in rank order. Empty: the rank cannot
  // reach the others (a job of one, or a program that tracked no group).
  std::function<std::vector<std::string>(const std::string&)> all_gather;
  bool quiet = false;    // no tables on standard output (a program's choice)
  bool no_hook = false;  // profile --no-hook: step times only
};

// Writes rank-<r>.json and removes the rank's capture; rank 0 (or a rank
// that cannot gather) renders what it has. Returns every rank's report on
// rank 0, this rank's elsewhere. Throws RunFailure when a file cannot be
// written, and after writing when the run ran out of memory (the sentence
// names the phase and the rank report).
std::vector<RankReport> WriteRunOutputs(const RankRun& run,
                                        const RunOutputOptions& options);

}  // namespace memprof
