// `memprof baseline` and `memprof check`, and the gate `profile --check`
// runs: read a run directory's rank reports and a baseline file, write a
// baseline, print and write a check's result. Exit codes: 0 within
// tolerance, 1 regressed (or improved, with --strict), 2 bad input or a
// context mismatch (Note [Context policy] in regression_check.h).
#pragma once

#include <string>
#include <vector>

#include "profiler/baseline.h"
#include "profiler/config_cli.h"

namespace memprof {

int RunBaselineCommand(const BaselineArgs& args);
int RunCheckCommand(const CheckArgs& args);

// Reads and parses a baseline; InputError naming the file and the reason.
Baseline LoadBaseline(const std::string& path);

// rank-0.json .. rank-<world_size - 1>.json of a `profile --out` directory.
RunFigures LoadRun(const std::string& dir);

// The rank reports' text, as rank 0 gathers them; `dir` names them.
RunFigures RunFromReportTexts(const std::vector<std::string>& texts,
                              const std::string& dir);

// Compares `run` with `baseline`, prints the table, writes --markdown and
// --json, appends the Markdown to $GITHUB_STEP_SUMMARY when it is set, and
// returns the exit code (0 or 1). Throws InputError on a context mismatch
// or an unwritable output.
int GateRun(const Baseline& baseline, const RunFigures& run,
            const std::string& run_dir, const CheckOptions& options);

}  // namespace memprof
