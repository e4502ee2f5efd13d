// The regression gate on a run: read a run directory's rank reports and a
// baseline file, compare them, print the table, write --markdown/--json.
// Shared by `memprof check` and `memprof profile --check`.
#pragma once

#include <string>
#include <vector>

#include "profiler/gate/baseline.h"
#include "profiler/gate/tolerance.h"

namespace memprof {

struct CheckOptions {
  std::string baseline_path;  // empty: no check
  ToleranceSettings tolerances;
  std::string markdown_path;         // "" : none
  std::string json_path;             // "" : none
  bool strict = false;               // improvements beyond tolerance fail too
  bool allow_config_change = false;  // Note [Context policy]
  bool only_changed = false;  // the table shows regressed and improved rows
};

// Reads and parses a baseline; InputError naming the file and the reason.
Baseline LoadBaseline(const std::string& path);

// rank-0.json .. rank-<world_size - 1>.json of a `profile --out` directory.
// Throws RunFailure (RequireFinishedRun) for a run that failed, InputError
// for a missing or malformed report.
RunFigures LoadRun(const std::string& dir);

// Throws RunFailure naming every rank of `ranks` that did not run all its
// configured steps to completion (out of memory, killed and recovered, a
// step cut short, fewer steps), the reason and the remedy: such a run is
// neither gated nor kept as a baseline. `dir` is the run's --run.
void RequireFinishedRun(const std::vector<RankReport>& ranks,
                        const std::string& dir);

// The rank reports as rank 0 gathers them; `dir` names them in errors.
// Throws InputError for a finished run that ended before its steady state
// began (a program's single step): nothing steady to gate.
void RequireSteadyState(const std::vector<RankReport>& ranks,
                        const std::string& dir);

RunFigures RunFromReports(const std::vector<RankReport>& ranks,
                          const std::string& dir);

// Called before the run is read (or trained). Throws InputError when
// --markdown or --json names one of the run's files in `run_dir` or the
// baseline itself, which writing would replace, a path that is not a
// replaceable file (RequireReplaceableFile), or a file in a directory that
// does not exist (other than `run_dir`, which profile creates). Then
// removes the files they name from an earlier check, so that a check that
// ends without a verdict (exit 2 or 3) leaves none that reads as its own.
void PrepareCheckOutputs(const CheckOptions& options,
                         const std::string& run_dir);

// Compares `run` with `baseline`, prints the table, writes --markdown and
// --json, appends the Markdown to $GITHUB_STEP_SUMMARY when it is set, and
// returns the exit code (0 or 1). Throws InputError on a context mismatch
// or an unwritable output.
int GateRun(const Baseline& baseline, const RunFigures& run,
            const std::string& run_dir, const CheckOptions& options);

}  // namespace memprof
