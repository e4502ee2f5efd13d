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
//
// Note [Snapshot window]
// The snapshot is written while the analysis reads the capture (a sink of
// its second pass), straight to its file: `device_traces[0]` holds the
// events of the kept steps only (Note [Kept steps]), in seq order, as
// PyTorch's own history keeps its last max_entries; `segments` are the
// blocks live at the end whatever step allocated them. A free in the
// trace whose alloc is not (its block was allocated in a step not kept) is
// what the viewers already meet in a history cut by max_entries.
// `memprof.kept_steps` names the steps kept.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "profiler/base/cuda_allocator_model.h"
#include "profiler/base/document_writer.h"
#include "profiler/capture/lifetime_analysis.h"

namespace memprof {

// Writes snapshot-<r>.json (or .pickle) at `path` as the analysis hands it
// the blocks (the segments from the blocks live at its end); Finish
// commits the file.
// `cuda_segments`: a GPU run's (Note [Snapshot of a GPU run]); null on CPU.
class SnapshotWriter : public CaptureSink {
 public:
  SnapshotWriter(const std::string& path, DocumentFormat format, int rank,
                 int64_t begin_seq,
                 const std::vector<CudaSegmentView>* cuda_segments);
  void OnMark(const PhaseMark& mark, bool kept) override;
  void OnAlloc(const Lifetime& block) override;
  void OnFree(const Lifetime& block) override;
  void OnEnd(const std::unordered_map<uint64_t, Lifetime>& live) override;
  // After the analysis: the memprof block, the rename.
  void Finish(int64_t end_seq);

 private:
  void Event(const char* action, const Lifetime& block, int64_t seq);

  DocumentWriter out_;
  int rank_;
  int64_t begin_seq_;
  const std::vector<CudaSegmentView>* cuda_segments_;
  bool kept_ = true;
  std::vector<int32_t> kept_steps_;
};

}  // namespace memprof
