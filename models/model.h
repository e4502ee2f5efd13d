// What the training loop needs from a model: its module, a batch of random
// data, and the loss. One model per file in models/; BuildModel picks one.
#pragma once

#include <memory>

#include <torch/torch.h>

#include "profiler/base/run_config.h"

namespace memprof {

struct Batch {
  torch::Tensor input;
  torch::Tensor target;
};

class TrainableModel {
 public:
  virtual ~TrainableModel() = default;
  virtual torch::nn::Module& module() = 0;
  // Random data for one step, drawn from the default generator.
  virtual Batch MakeBatch(int64_t micro_batch) = 0;
  // Forward pass and scalar loss.
  virtual torch::Tensor Loss(const Batch& batch) = 0;
};

// Throws ConfigError for an unknown config.model.
std::unique_ptr<TrainableModel> BuildModel(const RunConfig& config);

}  // namespace memprof
