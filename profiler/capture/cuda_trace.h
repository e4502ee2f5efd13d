// Note [CUDA trace translation]
// The CUDA backend of the hook. The CUDA caching allocator reports every
// request and every segment to the trackers attached with
// attachAllocatorTraceTracker (c10::CachingDeviceAllocator::TraceEntry),
// under its own lock, on the allocating thread. CudaTrace turns each entry
// into what memprof records:
//   SEGMENT_ALLOC / SEGMENT_FREE  a segment of the mirror (reserved bytes)
//   ALLOC                         a block: the mirror finds its allocated
//                                 size (rounding and the split rule; the
//                                 entry carries only the request); the
//                                 MemoryTracker records it at the request
//                                 rounded to 512 B, as on CPU, so
//                                 attribution (ownership, then the phase
//                                 rule) is the CPU code
//   FREE_REQUESTED                the block leaves the tracker and the
//                                 allocated bytes (as the allocator's own
//                                 allocated_bytes statistic does)
//   FREE_COMPLETED                the block is free in the mirror and merges
//   OOM                           the refusal: request and device free
//                                 bytes, and the tracker's refusal (its
//                                 breakdown at the failure)
//   SEGMENT_MAP / SEGMENT_UNMAP   expandable segments, not modelled: counted
//                                 as a mismatch
// Inside the callback nothing calls PyTorch or allocates through c10 (the
// mirror's nodes come from malloc), and the only locks taken are this
// object's and the tracker's, always after the allocator's: no inversion.
// A mirror that disagrees with an entry (a block where none can start) is
// not thrown from the callback: it is counted and the first one is kept,
// for the report's self-check.
//
// Note [Rounded categories]
// Categories count each block at its rounded request, not at its allocated
// size: a block the allocator did not split (Note [Split rule]) holds up to
// 1 MiB more, and which blocks those are depends on what the cache held at
// that moment. The rounded request is what the tensor itself takes, known
// to the byte from its size (weights, gradients and Adam state are
// predicted exactly); the blocks' extra bytes are in the allocator rows
// (allocated minus the categories' sum).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include <c10/core/CachingDeviceAllocator.h>

#include "profiler/base/cuda_allocator_model.h"
#include "profiler/capture/memory_tracker.h"

namespace memprof {

// The allocator's first refusal, as its OOM entry reports it.
struct CudaOutOfMemory {
  bool happened = false;
  int64_t requested_bytes = 0;
  int64_t device_free_bytes = 0;
  CudaAllocatorFigures figures;  // the mirror's, at the refusal
};

class CudaTrace {
 public:
  explicit CudaTrace(MemoryTracker& tracker) : tracker_(tracker) {}

  // One entry, as the allocator's trace tracker receives it.
  void Apply(const c10::CachingDeviceAllocator::TraceEntry& entry);

  // The allocator's memory limit (its memory fraction of the device), for
  // the tracker's refusal at an OOM entry; 0: none.
  void SetLimit(int64_t limit_bytes);
  // Peaks from now on, as the allocator's resetPeakStats.
  void ResetPeaks();

  CudaAllocatorFigures Now() const;
  std::vector<CudaSegmentView> Segments() const;
  CudaAllocatorFigures AtAllocatedPeak() const;
  int64_t PeakReserved() const;
  CudaOutOfMemory out_of_memory() const;
  // Entries the mirror could not follow, and the first one's reason.
  int64_t mismatches() const;
  std::string first_mismatch() const;

 private:
  void Mismatch(const std::string& what);

  MemoryTracker& tracker_;
  mutable std::mutex mutex_;  // guards everything below
  CudaAllocatorModel mirror_;
  CudaOutOfMemory out_of_memory_;
  int64_t limit_bytes_ = 0;
  int64_t mismatches_ = 0;
  std::string first_mismatch_;
};

}  // namespace memprof
