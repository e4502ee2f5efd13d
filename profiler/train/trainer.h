// One rank's training run under the hook: builds the model, wraps it in
// real DDP (DdpEngine over `group`), trains K steps with the configured
// optimizer, audits redundancy across ranks, and returns what it measured.
// On cpu it measures memory when InstallCpuHook() ran before any tensor was
// made; on cuda (train.device) the rank trains on GPU `cuda_device` and
// measures through the CUDA backend (CudaSession) unless `cuda_hook` is
// false. Without a hook (profile --no-hook) only the step times mean
// anything.
#pragma once

#include "profiler/base/run_config.h"
#include "profiler/session/rank_run.h"
#include "profiler/session/session_impl.h"
#include "profiler/train/ddp_engine.h"

namespace memprof {

// `memory_limit_bytes` (0: none) emulates a device of that size on cpu
// (Note [Memory limit]) and is the allocator's memory fraction on cuda: on
// out-of-memory the step is cut short and the run says so
// (RankRun::RanOutOfMemory()); the rank does not train further. `hook`
// false (profile --no-hook): only the step times mean anything. `outputs`:
// where the rank's capture file and snapshot go, and what they keep.
RankRun RunRank(const RunConfig& config, ProcessGroup& group,
                int64_t memory_limit_bytes = 0, int cuda_device = 0,
                bool hook = true, const CaptureOutputs& outputs = {});

}  // namespace memprof
