// One rank's training run under the hook: builds the model, wraps it in
// real DDP (DdpEngine over `group`), trains K steps with the configured
// optimizer, audits redundancy across ranks, and returns what it measured.
// Measures memory when InstallCpuHook() ran before any tensor was made;
// without the hook (profile --no-hook) only the step times mean anything.
#pragma once

#include "profiler/base/run_config.h"
#include "profiler/train/ddp_engine.h"
#include "profiler/train/rank_run.h"

namespace memprof {

// `memory_limit_bytes` (0: none) emulates a device of that size (Note
// [Memory limit]): on out-of-memory the step is cut short and the run says
// so (RankRun::RanOutOfMemory()); the rank does not train further.
RankRun RunRank(const RunConfig& config, ProcessGroup& group,
                int64_t memory_limit_bytes = 0);

}  // namespace memprof
