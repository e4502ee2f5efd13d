#include "profiler/session/attribution.h"

#include "profiler/capture/memory_tracker.h"

namespace memprof {

int64_t ResolveOwnership(const std::vector<torch::Tensor>& tensors,
                         Category category, OwnershipMisses& misses,
                         uint8_t flags) {
  MemoryTracker& tracker = MemoryTracker::Get();
  int64_t resolved = 0;
  for (const torch::Tensor& tensor : tensors) {
    if (!tensor.defined() || !tensor.has_storage()) continue;
    const void* data = tensor.storage().data();
    if (data == nullptr) continue;
    switch (tracker.Resolve(data, category, flags)) {
      case ResolveResult::kResolved:
        ++resolved;
        break;
      case ResolveResult::kAlready:
        break;
      case ResolveResult::kNotFound:
      case ResolveResult::kBeforeSession:
        ++misses.not_found;
        break;
      case ResolveResult::kConflict:
        ++misses.conflict;
        break;
    }
  }
  return resolved;
}

std::vector<torch::Tensor> Gradients(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> grads;
  for (const torch::Tensor& p : params) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  return grads;
}

std::vector<torch::Tensor> OptimizerStateTensors(
    torch::optim::Optimizer& optimizer) {
  // In parameter order (the state map is keyed by TensorImpl address, so
  // its own order differs from process to process).
  std::vector<torch::Tensor> tensors;
  for (const torch::optim::OptimizerParamGroup& group :
       optimizer.param_groups()) {
    for (const torch::Tensor& p : group.params()) {
      const auto it = optimizer.state().find(p.unsafeGetTensorImpl());
      if (it == optimizer.state().end()) continue;
      torch::optim::OptimizerParamState* state = it->second.get();
      if (auto* adam = dynamic_cast<torch::optim::AdamParamState*>(state)) {
        tensors.insert(tensors.end(), {adam->exp_avg(), adam->exp_avg_sq(),
                                       adam->max_exp_avg_sq()});
      } else if (auto* adamw =
                     dynamic_cast<torch::optim::AdamWParamState*>(state)) {
        tensors.insert(tensors.end(), {adamw->exp_avg(), adamw->exp_avg_sq(),
                                       adamw->max_exp_avg_sq()});
      } else if (auto* sgd =
                     dynamic_cast<torch::optim::SGDParamState*>(state)) {
        tensors.push_back(sgd->momentum_buffer());
      }
    }
  }
  return tensors;
}

}  // namespace memprof
