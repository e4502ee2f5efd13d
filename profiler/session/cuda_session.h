// A rank's run on its GPU, from the device's side: selects the GPU,
// attaches the CUDA backend of the hook (CudaTrace, fed by the caching
// allocator's trace tracker), warms up the libraries before the session,
// applies the memory limit as the allocator's memory fraction, and reads
// the self-checks and the moments of profiler/base/cuda_run.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/base/cuda_run.h"

namespace memprof {

class CudaSession {
 public:
  // `memory_limit_bytes` (0: none) becomes the allocator's memory fraction
  // of the device. Call before any CUDA tensor is made.
  CudaSession(int device, int64_t memory_limit_bytes);

  // The device memory outside the allocator now (Note [Outside the
  // allocator]).
  void Moment(const std::string& name);
  // The self-check at the phase mark just set (Note [CUDA self-check]).
  void Check(Phase phase, int32_t step);
  // Resets memprof's and the allocator's peaks together.
  void StartSteadyState();
  // Whether the allocator refused an allocation (its OOM entry).
  bool RanOutOfMemory() const;
  CudaRun Finish();
  // The allocator's segments now, for the snapshot.
  std::vector<CudaSegmentView> Segments() const;

  int device() const { return run_.device; }

 private:
  CudaRun run_;
};

}  // namespace memprof
