// What a run's allocations would cost on a GPU: the session's blocks,
// replayed in the order they were allocated and freed through the model of
// the CUDA caching allocator (cuda_allocator_model.h). A CPU run thereby
// tells a user without a GPU how much the allocator would round, split and
// keep reserved. An estimate: a GPU run of the same model allocates what
// its own kernels need, which can differ from the CPU kernels' workspaces.
#pragma once

#include <cstdint>
#include <vector>

#include "profiler/base/cuda_allocator_model.h"
#include "profiler/capture/memory_tracker.h"

namespace memprof {

CudaReplay ReplayOnCudaAllocator(const std::vector<Lifetime>& lifetimes);

}  // namespace memprof
