// A data-parallel job of one rank in this process, as a plain
// `memprof profile` runs (the test binary installs the hook first), every
// step kept in detail.
#pragma once

#include "profiler/train/trainer.h"

namespace memprof {

inline RankRun RunSolo(const RunConfig& config,
                       int64_t memory_limit_bytes = 0) {
  ProcessGroup group(RankTopology{}, /*timeout_s=*/30);  // a free port
  CaptureOutputs outputs;
  outputs.keep.all = true;
  return RunRank(config, group, memory_limit_bytes, /*cuda_device=*/0,
                 /*cuda_hook=*/true, outputs);
}

}  // namespace memprof
