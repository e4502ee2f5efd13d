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

// A language model's batch: [micro_batch, seq_len] token ids drawn uniformly
// from the vocabulary, and as many labels.
Batch TokenBatch(int64_t micro_batch, int64_t seq_len, int64_t vocab);

class TrainableModel {
 public:
  virtual ~TrainableModel() = default;
  virtual torch::nn::Module& module() = 0;
  // Random data for one step, drawn from the default generator; floating
  // inputs in float_dtype().
  virtual Batch MakeBatch(int64_t micro_batch) = 0;
  // Forward pass and scalar loss.
  virtual torch::Tensor Loss(const Batch& batch) = 0;

  // The dtype of the parameters, floating buffers and floating inputs:
  // bfloat16 under train.dtype = bfloat16, float32 otherwise.
  torch::Dtype float_dtype() const { return float_dtype_; }
  // Converts the module's floating parameters and buffers (integer and
  // bool buffers stay as they are), and the inputs MakeBatch draws.
  void ConvertTo(torch::Dtype dtype);

 private:
  torch::Dtype float_dtype_ = torch::kFloat32;
};

// Throws ConfigError for an unknown config.model. Under train.dtype =
// bfloat16 the model is converted (ConvertTo) before it is returned; the
// parameters train.freeze covers do not require grad. With [lora] the
// adapters are attached (AttachAdapters) after the base is built, so the
// base draws the same weights as without them.
std::unique_ptr<TrainableModel> BuildModel(const RunConfig& config);

}  // namespace memprof
