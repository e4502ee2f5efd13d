// What a run's allocations would cost on a GPU: the session's blocks,
// replayed in the order they were allocated and freed through the model of
// the CUDA caching allocator (cuda_allocator_model.h). A CPU run thereby
// tells a user without a GPU how much the allocator would round, split and
// keep reserved. An estimate: a GPU run of the same model allocates what
// its own kernels need, which can differ from the CPU kernels' workspaces.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "profiler/base/cuda_allocator_model.h"
#include "profiler/capture/lifetime_analysis.h"

namespace memprof {

// A sink of the analysis' second pass: it gets the blocks in seq order.
class CudaReplaySink : public CaptureSink {
 public:
  void OnAlloc(const Lifetime& block) override {
    address_[block.address] = model_.Malloc(block.bytes);
  }
  void OnFree(const Lifetime& block) override {
    const auto it = address_.find(block.address);
    model_.Free(it->second);
    address_.erase(it);
  }
  CudaReplay Result() const {
    return {model_.at_allocated_peak(), model_.peak_reserved(),
            model_.segment_count()};
  }

 private:
  CudaAllocatorModel model_;
  std::unordered_map<uint64_t, uint64_t> address_;  // block -> model's
};

}  // namespace memprof
