// A session's blocks in the format of PyTorch's memory snapshot
// (torch.cuda.memory._snapshot()), so that memory viewers that read it
// (pytorch.org/memory_viz) open memprof's capture.
//
// Note [Snapshot of a CPU run]
// The CPU allocator has no cache: every block is its own allocation from
// the system. So each block is also its own segment: `segments` lists the
// blocks live at the end of the session, one segment each, tiled exactly by
// one `active_allocated` block; `device_traces[0]` has, per block in seq
// order, `segment_alloc` + `alloc` at its allocation and `free_requested` +
// `free_completed` + `segment_free` at its free. Every event carries `addr`
// (the real address), `size` (bytes), `stream` 0, `frames` [] (memprof
// records no stacks), `seq` (memprof's event counter) and `category` (the
// block's final memprof category). The viewer colours by category, slot i
// of its palette for the i-th category named in the trace, and fails to
// load a file whose events carry categories when none is named `unknown`;
// so the trace opens with ten `snapshot` events (PyTorch's marker of when a
// snapshot was taken; here: where the session began, seq begin_seq), one
// per palette slot, naming `unknown` and every category in the order that
// gives each the report's colour (Note [Category colours] in
// profiler/base/category_palette.h). Blocks allocated before the session
// are not in the capture.
//
// Note [Snapshot of a GPU run]
// On a GPU `segments` are the caching allocator's own, as memprof's mirror
// of it holds them when the session ends (CudaAllocatorModel::Segments):
// real addresses and sizes, each tiled by its blocks in their states
// (`active_allocated`, `active_pending_free`, `inactive`), an allocated
// block carrying its memprof category. `device_traces[0]` has the
// session's blocks as on CPU but without segment events: memprof keeps the
// segments' state, not their history.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "profiler/base/cuda_allocator_model.h"
#include "profiler/capture/memory_tracker.h"

#include "profiler/base/schema_version.h"

namespace memprof {

// The capture's lifetimes must carry final categories (EndSession's do).
// `cuda_segments`: a GPU run's (Note [Snapshot of a GPU run]); null on CPU.
nlohmann::ordered_json MemorySnapshotJson(
    const Capture& capture, int rank,
    const std::vector<CudaSegmentView>* cuda_segments = nullptr);

}  // namespace memprof
