// Attribution of the weights' lower-precision copies under bf16-autocast.
//
// Note [Weight casts]
// Under train.dtype = bf16-autocast the forward runs in an autocast region
// (models/autocast_region.h). An op that autocast runs in bfloat16 (an
// addmm, a matmul, a convolution) casts its float32 arguments first. A
// cast of a leaf that requires grad (a convolution's weight, a 2-D
// Linear's bias) goes to autocast's cache, which hands the same copy to
// every later use in the region and drops it when the region ends. A cast
// of a view is not cached: LibTorch's Linear passes weight.t(), so a
// Linear's weight copy (and the tied output projection's copy of
// wte.weight.t()) lives only as long as the autograd graph keeps it, until
// its node's backward, or is freed at once when nothing saves it. Either
// way it is a copy of a weight, two bytes per element.
//
// These copies are weight_casts, by ownership, at the moment they are
// made: an observer of the dispatcher's RecordFunction sees every
// aten::_to_copy whose input shares a parameter's storage and whose output
// is a reduced float type, and resolves the output's storage. So a copy is
// attributed wherever it is made: in forward, and in a checkpointed
// block's rerun inside backward. Without the observer they would read as
// activations (those the graph keeps) or temporaries. The observer is
// installed only in bf16-autocast runs; it makes every op record its
// inputs, which costs step time there (not memory).
#pragma once

#include <memory>
#include <vector>

#include <torch/torch.h>

namespace memprof {

class WeightCastObserver {
 public:
  // Observes casts of `params` (by storage) until destroyed. One at a time.
  explicit WeightCastObserver(const std::vector<torch::Tensor>& params);
  ~WeightCastObserver();
  WeightCastObserver(const WeightCastObserver&) = delete;
  WeightCastObserver& operator=(const WeightCastObserver&) = delete;

  // Casts whose block the tracker could not resolve (should stay 0).
  int64_t missed() const;

 private:
  uint64_t handle_ = 0;
};

}  // namespace memprof
