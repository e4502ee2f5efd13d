// `memprof fit --runs DIR1,DIR2[,...] --budget 80GiB [--micro-batch B]
// [--measure --command '... {micro_batch} ...']`: the verdict of
// `memprof fit` for a model memprof has no size table for, from its runs
// (Note [Fit from runs] in profiler/predict/fit_runs.h); with --measure,
// the program run at the predicted largest micro-batch and one above it
// under a memory limit of the budget, each into a fresh directory. Exit
// codes: 0 it fits (and, measured, as predicted), 1 it does not or the
// measurement disagrees, 2 bad input (runs that cannot be fitted), 3 a
// measured run failed for another reason than memory.
#pragma once

#include "profiler/cli/config_cli.h"

namespace memprof {

int RunFitRunsCommand(const FitArgs& args);

}  // namespace memprof
