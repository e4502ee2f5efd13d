// How many ranks this machine can start (Note [Local world size]): checked
// before `profile` forks its ranks and before `sweep` runs any point.
#pragma once

#include "profiler/base/run_config.h"

namespace memprof {

// InputError naming --world-size, the bound and the remedy when
// config.ddp.world_size ranks do not fit this machine's cores or available
// memory.
void CheckLocalWorldSize(const RunConfig& config);

}  // namespace memprof
