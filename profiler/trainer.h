// One rank's training run under the hook: builds the model, wraps it in
// real DDP (DdpEngine over `group`), trains K steps with the configured
// optimizer, audits redundancy across ranks, and returns the rank's report.
// Measures memory when InstallCpuHook() ran before any tensor was made;
// without the hook (profile --no-hook) only the step times mean anything.
#pragma once

#include "profiler/ddp_engine.h"
#include "profiler/rank_report.h"
#include "profiler/run_config.h"

namespace memprof {

RankReport RunRank(const RunConfig& config, ProcessGroup& group);

}  // namespace memprof
