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
// Under ZeRO-1 the optimizer state and the update's temporaries are the
// predicted rank's partition (Note [ZeRO-1 partition]).
// Only the tensors of the size table are allocated: a GPU's kernels also
// take workspaces of their own (cuBLAS, cuDNN) that it does not know.
//
// Note [Outside-allocator allowance]
// A GPU also holds memory the caching allocator never sees: the CUDA
// context, the libraries' handles and workspaces, NCCL's buffers (Note
// [Outside the allocator]). What a run needs of a GPU is the predicted
// reserved bytes plus that memory, which no size table predicts: memprof
// allows kDefaultOutsideAllocatorBytes for it, a round allowance, not a
// measurement (memprof has not yet run on a GPU), which --gpu-outside-allocator
// overrides with the figure a GPU run measured (its report's "memory
// outside the allocator").
#pragma once

#include <cstdint>
#include <string>

#include "profiler/base/cuda_allocator_model.h"
#include "profiler/base/run_config.h"
#include "profiler/predict/prediction.h"

namespace memprof {

inline constexpr int64_t kDefaultOutsideAllocatorBytes = int64_t{1} << 30;

struct CudaPrediction {
  // The allocator's figures at the predicted steady-state peak moment.
  CudaAllocatorFigures at_peak;
  int64_t peak_reserved = 0;  // the most reserved over both steps
};

CudaPrediction PredictOnCuda(const Prediction& prediction,
                             const RunConfig& config);

// Note [Math-path attention]
// On a GPU, scaled_dot_product_attention with grouped key/value heads
// (llama, K < H) in float32 has no fused kernel: flash-attention runs in
// 16 bits only, and the memory-efficient kernel takes no grouped heads. It
// takes PyTorch's math path, which repeats k and v per query head and keeps
// the [B, H, T, T] attention probabilities in float32 for backward
// (docs/llama.md). The size table holds the fused kernels' tensors (the
// CPU's), so the prediction leaves that out; memprof has not run it on a
// GPU. What it leaves out at least, the probabilities of every layer, in
// bytes; 0 for every other config.
int64_t MathPathAttentionBytes(const RunConfig& config, int64_t micro_batch);

// The sentence predict and fit print under a GPU figure when
// MathPathAttentionBytes is not 0 ("" otherwise).
std::string MathPathAttentionNote(const RunConfig& config, int64_t micro_batch);

}  // namespace memprof
