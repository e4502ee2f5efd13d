// The runs `memprof fit --runs DIR1,DIR2,...` fits (Note [Fit from runs] in
// profiler/predict/fit_runs.h), read through the one rank-report reader and
// checked to be runs of one model that differ only in the micro-batch.
#pragma once

#include <string>
#include <vector>

#include "profiler/predict/fit_runs.h"
#include "profiler/report/run_reports.h"

namespace memprof {

struct RunsForFit {
  std::vector<FitRunFigures> runs;  // in the order given
  std::string model;                // a program's name, or the built-in model
  bool program = false;             // a program's own model (no size table)
  int world_size = 1;
};

// The figures of one complete run: the busiest rank's, moment by moment
// (each moment's highest live total over the ranks), and each model-state
// category's steady-state largest; on a GPU the most reserved and the
// memory outside the allocator.
FitRunFigures FiguresOfRun(const RunView& view);

// Reads every directory of `dirs` (the --runs list). Throws InputError,
// naming the directory and the remedy, when one is not a complete run
// (missing or unreadable reports, out of memory, a killed rank) or when the
// runs are not of one model at one world size on one device with one
// config but for the micro-batch.
RunsForFit ReadRunsForFit(const std::vector<std::string>& dirs);

}  // namespace memprof
