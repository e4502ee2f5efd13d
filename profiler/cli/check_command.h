// `memprof baseline` and `memprof check`, and the gate `profile --check`
// runs: read a run directory's rank reports and a baseline file, write a
// baseline, print and write a check's result. Exit codes: 0 within
// tolerance, 1 regressed (or improved, with --strict), 2 bad input or a
// context mismatch (Note [Context policy] in regression_check.h).
#pragma once

#include "profiler/cli/config_cli.h"

namespace memprof {

int RunBaselineCommand(const BaselineArgs& args);
int RunCheckCommand(const CheckArgs& args);

}  // namespace memprof
