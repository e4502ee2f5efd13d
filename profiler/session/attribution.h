// Ownership: tells the tracker which live blocks back the tensors that a
// training run owns (parameters, buffers, .grad, optimizer state, batch).
// Ownership beats phase (Note [Block lifetimes]).
#pragma once

#include <vector>

#include <torch/torch.h>

#include "profiler/base/category.h"

namespace memprof {

// Counts what could not be attributed; both should stay 0.
struct OwnershipMisses {
  int64_t not_found = 0;  // storage not recorded by the hook
  int64_t conflict = 0;   // storage already owned by another category
};

// Resolves each tensor's storage as `category`. Undefined or empty tensors
// are skipped; storages shared by several tensors count once.
// Returns how many storages were newly resolved (not already this
// category's).
int64_t ResolveOwnership(const std::vector<torch::Tensor>& tensors,
                         Category category, OwnershipMisses& misses,
                         uint8_t flags = 0);

// Defined .grad of each parameter.
std::vector<torch::Tensor> Gradients(const std::vector<torch::Tensor>& params);

// Adam/AdamW moments (and max_exp_avg_sq with amsgrad), SGD momentum, in
// parameter order.
std::vector<torch::Tensor> OptimizerStateTensors(
    torch::optim::Optimizer& optimizer);

}  // namespace memprof
