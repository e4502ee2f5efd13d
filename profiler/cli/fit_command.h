// `memprof fit --config F --budget 80GiB [--world-size N] [--measure]`:
// the verdict of profiler/predict/fit.h from the prediction and, with
// --measure, from real one-rank runs under --memory-limit BUDGET: micro-batch
// 1, then the largest micro-batch that runs to completion (the next one runs
// out of memory). Exit codes: 0 it fits, 1 it does not, 2 bad input, 3 a
// measured run failed for another reason than memory.
#pragma once

#include "profiler/cli/config_cli.h"

namespace memprof {

int RunFitCommand(const FitArgs& args);

}  // namespace memprof
