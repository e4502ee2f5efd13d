// One rank's training run under the hook: builds the model, trains K steps
// with the configured optimizer, attributes every block and returns the
// rank's report. Requires InstallCpuHook() before any tensor was made.
#pragma once

#include "profiler/rank_report.h"
#include "profiler/run_config.h"

namespace memprof {

RankReport RunRank(const RunConfig& config, const RankContext& context);

}  // namespace memprof
