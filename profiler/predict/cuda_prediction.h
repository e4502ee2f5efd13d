// The prediction on a GPU: the size table's tensors allocated in the order
// the first two steps create and free them, through the model of the CUDA
// caching allocator (profiler/base/cuda_allocator_model.h). It adds what
// the byte sums leave out: each tensor rounded to the allocator's blocks,
// the segments it reserves, and the free space those segments keep once
// step 1's activations and DDP's first buckets are gone.
//
// Note [CUDA prediction sequence]
//   set-up   weights and buffers; DDP's one step-1 bucket of every gradient
//   step 1   inputs, saved tensors, workspace (forward, early backward);
//            gradients; saved tensors and workspace freed (backward), the
//            4-byte loss left; optimizer state, its two temporaries for
//            the largest parameter, freed; the loss and inputs freed
//   step 2   the step-1 bucket freed and the rebuilt buckets allocated (a
//            1 MiB first bucket, then bucket_cap_mb, in reverse parameter
//            order); then as step 1 with the gradients and optimizer state
//            kept: the early-backward and optimizer moments of the steady
//            state
// Only the tensors of the size table are allocated: a GPU's kernels also
// take workspaces of their own (cuBLAS, cuDNN) that it does not know.
#pragma once

#include <cstdint>

#include "profiler/base/cuda_allocator_model.h"
#include "profiler/base/run_config.h"
#include "profiler/predict/prediction.h"

namespace memprof {

struct CudaPrediction {
  // The allocator's figures at the predicted steady-state peak moment.
  CudaAllocatorFigures at_peak;
  int64_t peak_reserved = 0;  // the most reserved over both steps
};

CudaPrediction PredictOnCuda(const Prediction& prediction,
                             const RunConfig& config);

}  // namespace memprof
