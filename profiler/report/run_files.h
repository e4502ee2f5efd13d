// The files a run keeps in its directory (the --out of `memprof profile`):
// rank-<r>.json, snapshot-<r>.json|pickle, capture-<r>.bin, summary.json,
// report.md, report.html, trace.json. A command that writes a file a flag
// names beside a run (baseline --out, check --markdown and --json) must
// not replace one of them.
#pragma once

#include <map>
#include <string>

namespace memprof {

// Whether `name` (a file name, no directory) is one a run writes.
bool IsRunFileName(const std::string& name);

// The rank-<r>.json files in `dir`, by rank (r from 0 to 999,999, without
// leading zeros), their paths; none when `dir` cannot be read.
std::map<int, std::string> RankReportFiles(const std::string& dir);

// Throws RunFailure when `dir` has no rank-<rank>.json but that rank's
// capture-<rank>.bin: the run stopped before it wrote its reports (killed,
// a full disk), and `memprof report --run DIR` recovers them and says why.
// Throws InputError when `dir` cannot be read.
void RequireRecoveredReport(const std::string& dir, int rank);

// Throws InputError "FLAG PATH: that is FILE of the run in DIR, which
// memprof would overwrite; choose a path outside the run's files" when
// `path` names one of the run's files in `run_dir`: by its name in that
// directory, or as the same file through a link.
void RequireOutsideRun(const std::string& flag, const std::string& path,
                       const std::string& run_dir);

}  // namespace memprof
