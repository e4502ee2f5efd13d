// The synthetic caching-allocator entries the CUDA trace callback is
// measured on (bench/cuda_trace_bench, bench/instruction_bench): 64 blocks
// split one after another off the free rest of one segment, then freed in
// reverse (FREE_REQUESTED, then FREE_COMPLETED merging with the free rest):
// 192 entries, after the segment's own SEGMENT_ALLOC.
#pragma once

#include <cstdint>
#include <vector>

#include <c10/core/CachingDeviceAllocator.h>

#include "profiler/base/cuda_allocator_model.h"

namespace memprof {

using TraceEntry = c10::CachingDeviceAllocator::TraceEntry;

inline TraceEntry SyntheticEntry(TraceEntry::Action action, uint64_t address,
                                 int64_t bytes) {
  return TraceEntry(action, /*device=*/0, address, static_cast<size_t>(bytes),
                    /*stream=*/nullptr, /*mempool=*/{0, 0}, /*time=*/0);
}

struct SyntheticTrace {
  TraceEntry segment;              // SEGMENT_ALLOC, to apply first
  std::vector<TraceEntry> events;  // the 192 measured entries
};

// `block`: a multiple of 512.
inline SyntheticTrace SplitAndMergeTrace(int64_t block) {
  constexpr int kBlocks = 64;
  const uint64_t base = uint64_t{0x7d00} << 32;
  SyntheticTrace trace{SyntheticEntry(TraceEntry::SEGMENT_ALLOC, base,
                                      CudaSegmentSize(block * kBlocks)),
                       {}};
  for (int i = 0; i < kBlocks; ++i) {
    trace.events.push_back(
        SyntheticEntry(TraceEntry::ALLOC, base + i * block, block));
  }
  for (int i = kBlocks - 1; i >= 0; --i) {
    trace.events.push_back(
        SyntheticEntry(TraceEntry::FREE_REQUESTED, base + i * block, 0));
    trace.events.push_back(
        SyntheticEntry(TraceEntry::FREE_COMPLETED, base + i * block, 0));
  }
  return trace;
}

}  // namespace memprof
