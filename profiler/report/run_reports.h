// The reports a person reads (report.md, report.html, trace.json), rendered
// from the rank reports alone: by rank 0 at the end of a profile, or
// by `memprof report --run DIR` from files copied off another machine.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "profiler/report/rank_report.h"

namespace memprof {

// A rank whose report could not be used: the file is missing or malformed.
struct RankFileProblem {
  int rank = 0;
  std::string path;
  std::string reason;  // "missing", "not JSON: ...", "schema: ..."
};

// The ranks of one run that could be read, and the ones that could not.
struct RunView {
  std::string dir;
  int world_size = 0;
  std::vector<RankReport> ranks;          // readable, in rank order
  std::vector<RankFileProblem> problems;  // by rank; empty: complete
  bool complete() const { return problems.empty(); }
};

// The reports of a finished run, in rank order (all of them valid).
RunView RunViewOf(const std::string& dir, std::vector<RankReport> ranks);

// Throws InputError naming `dir` (as the --run flag) unless it is a
// directory.
void RequireRunDirectory(const std::string& dir);

// Reads dir/rank-<r>.json for r < world size (the largest a readable report
// names). Throws InputError (naming every file and why) when none is usable.
RunView LoadRunView(const std::string& dir);

// Writes report.md, report.html and trace.json into view.dir, each
// atomically. Throws std::runtime_error naming a file it cannot write.
void WriteRunReports(const RunView& view);

// Writes the three reports of `view` and names them on `out`; names each
// unreadable rank report on `err`. Returns 0, or 2 when the run is
// incomplete.
int RenderRunReports(const RunView& view, std::ostream& out, std::ostream& err);

}  // namespace memprof
