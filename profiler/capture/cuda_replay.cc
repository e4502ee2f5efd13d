#include "profiler/capture/cuda_replay.h"

#include <algorithm>

namespace memprof {

CudaReplay ReplayOnCudaAllocator(const std::vector<Lifetime>& lifetimes) {
  // Every alloc and free of the session, by seq (one counter orders them).
  struct Event {
    int64_t seq;
    size_t block;
    bool alloc;
  };
  std::vector<Event> events;
  events.reserve(2 * lifetimes.size());
  for (size_t i = 0; i < lifetimes.size(); ++i) {
    events.push_back({lifetimes[i].alloc_seq, i, true});
    if (lifetimes[i].free_seq != kLive) {
      events.push_back({lifetimes[i].free_seq, i, false});
    }
  }
  std::sort(events.begin(), events.end(),
            [](const Event& a, const Event& b) { return a.seq < b.seq; });
  CudaAllocatorModel model;
  std::vector<uint64_t> address(lifetimes.size());
  for (const Event& e : events) {
    if (e.alloc) {
      address[e.block] = model.Malloc(lifetimes[e.block].bytes);
    } else {
      model.Free(address[e.block]);
    }
  }
  return {model.at_allocated_peak(), model.peak_reserved(),
          model.segment_count()};
}

}  // namespace memprof
