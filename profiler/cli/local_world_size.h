// How many ranks this machine can start (Note [Local world size]): checked
// before `profile` forks its ranks and before `sweep` runs any point.
#pragma once

#include "profiler/base/run_config.h"

namespace memprof {

// InputError naming --world-size, the bound and the remedy when
// config.ddp.world_size ranks are more than this machine's cores allow.
void CheckLocalWorldSize(const RunConfig& config);

// Note [Local memory]
// A run started here (one rank, or the local launcher's N) holds its
// tensors in this machine's memory: before any model is built, N times
// (the busiest rank's predicted peak, or --memory-limit when smaller, which
// the hook enforces, + 150 MiB for the process; on a GPU the process alone)
// must be within what the kernel reports available (`available_bytes`;
// 0: unknown, not checked). Else InputError naming the figures and the
// remedies, --skip-memory-check among them. Ranks started by torchrun,
// srun or mpirun are not checked.
inline constexpr int64_t kRankProcessBytes = int64_t{150} << 20;
void CheckLocalMemory(const RunConfig& config, int64_t memory_limit_bytes,
                      int64_t available_bytes);

// Bytes the kernel says can still be given out (MemAvailable); 0 when
// /proc/meminfo cannot be read.
int64_t AvailableMemoryBytes();

}  // namespace memprof
