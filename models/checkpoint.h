// Activation checkpointing (train.activation_checkpointing = blocks): a
// block's forward runs without autograd and keeps only the block's input;
// its backward reruns the block with autograd, with the random state its
// forward saw (so dropout draws the same masks), and backpropagates
// through the rerun. LibTorch's C++ API has no checkpoint; this is a
// custom autograd function (Note [Checkpointed blocks] in checkpoint.cc).
#pragma once

#include <functional>

#include <torch/torch.h>

namespace memprof {

// A block: its output from its input. `recomputing` is true in the rerun
// inside backward; a block whose forward has side effects (BatchNorm's
// running statistics) skips them then, so they happen once per step.
using BlockForward =
    std::function<torch::Tensor(const torch::Tensor& x, bool recomputing)>;

// Told when a checkpointed block reruns its forward inside backward, on
// the thread that runs that backward. The profiler counts what the rerun
// leaves live as activations and times the rerun.
class RecomputeObserver {
 public:
  virtual ~RecomputeObserver() = default;
  virtual void BeginRecompute() = 0;
  // The rerun's forward is done; the block's backward comes next.
  virtual void EndRecompute() = 0;
};

// Process-wide; nullptr (the default) observes nothing.
void SetRecomputeObserver(RecomputeObserver* observer);

// block(x), checkpointed. x must require grad (a block inside a model
// whose earlier layers have parameters).
torch::Tensor Checkpoint(BlockForward block, const torch::Tensor& x);

}  // namespace memprof
