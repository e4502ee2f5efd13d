// What a run on a GPU measured from the device's side, beside the
// categories: the caching allocator's figures (memprof's mirror of its
// trace), memprof's self-check against the allocator's own statistics, and
// the device memory outside the allocator at named moments. Filled by
// profiler/train/cuda_session; a rank report's `cuda_run`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/base/category.h"
#include "profiler/base/cuda_allocator_model.h"

namespace memprof {

// Note [CUDA self-check]
// At every phase mark memprof's mirror of the allocator (built from its
// trace alone) and the allocator's own DeviceStats are read side by side:
// requested, allocated and reserved bytes must agree to the byte. A
// disagreement is kept and shown, never corrected.
struct CudaSelfCheck {
  int32_t step = 0;
  Phase phase = Phase::kIdle;
  CudaAllocatorFigures memprof;    // the mirror's
  CudaAllocatorFigures allocator;  // getDeviceStats
  bool Matches() const {
    return memprof.requested == allocator.requested &&
           memprof.allocated == allocator.allocated &&
           memprof.reserved == allocator.reserved;
  }
};

// Note [Outside the allocator]
// cudaMemGetInfo's used bytes (the whole device, every process on it)
// minus what this process's allocator has reserved: the CUDA context, the
// libraries' handles, NCCL's buffers, and any other process on the GPU.
// Read at named moments:
//   process_start   before this process made its CUDA context (NVML's
//                   used bytes; absent where NVML cannot answer)
//   cuda_context    CUDA initialised on the rank's GPU
//   cuda_libraries  after a warm-up matmul forward and backward (cuBLAS
//                   handles and their workspaces)
//   model           the model on the GPU
//   process_group   after DDP's set-up collectives (NCCL's communicator)
//   step_<k>        at the end of step k (the first and the last)
struct CudaMoment {
  std::string moment;
  int64_t device_used = 0;
  int64_t reserved = 0;
  int64_t allocated = 0;
  int64_t outside() const { return device_used - reserved; }
};

struct CudaRun {
  int device = 0;  // the rank's GPU index
  std::string device_name;
  int64_t device_total = 0;
  // The steady state's allocated peak (memprof's mirror) and the four
  // figures then; its reserved peak; and the allocator's own peaks over
  // the same steps (reset together at the steady state's start).
  CudaAllocatorFigures at_allocated_peak;
  int64_t peak_reserved = 0;
  int64_t allocator_peak_allocated = 0;
  int64_t allocator_peak_reserved = 0;
  // PredictOnCuda for the run's config: the figures at the predicted peak
  // and the most it predicts reserved.
  CudaAllocatorFigures predicted_at_peak;
  int64_t predicted_peak_reserved = 0;
  // Allocated before the session (the warm-up's library workspaces), left
  // out of the categories.
  int64_t before_session_allocated = 0;
  std::vector<CudaSelfCheck> checks;
  std::vector<CudaMoment> moments;
  // Trace entries the mirror could not follow, and the first one's reason.
  int64_t mismatches = 0;
  std::string first_mismatch;
  int64_t memory_limit_bytes = 0;  // the allocator's fraction x total; 0: none
  // The allocator's refusal, if any (its own OOM entry).
  bool out_of_memory = false;
  int64_t oom_requested_bytes = 0;
  int64_t oom_device_free_bytes = 0;
  CudaAllocatorFigures at_out_of_memory;

  bool PeaksMatch() const {
    return at_allocated_peak.allocated == allocator_peak_allocated &&
           peak_reserved == allocator_peak_reserved;
  }
  int64_t FailedChecks() const {
    int64_t failed = 0;
    for (const CudaSelfCheck& c : checks) failed += c.Matches() ? 0 : 1;
    return failed;
  }
};

}  // namespace memprof
