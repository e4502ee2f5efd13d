// A multilayer perceptron classifier: `depth` hidden Linear+ReLU layers of
// width `hidden`, then a Linear to `output` classes; cross-entropy loss.
#pragma once

#include <torch/torch.h>

#include "models/model.h"

namespace memprof {

class MlpImpl : public torch::nn::Module {
 public:
  // lora: how the adapters AttachAdapters gives its layers compute.
  explicit MlpImpl(const MlpConfig& config, const LoraConfig& lora = {});
  torch::Tensor forward(torch::Tensor x);  // [B, input] -> [B, output]

 private:
  // The Linear layers_[i], with its adapter.
  torch::Tensor Layer(size_t i, const torch::Tensor& x);

  LoraConfig lora_;
  torch::nn::Sequential layers_;
};
TORCH_MODULE(Mlp);

class MlpModel final : public TrainableModel {
 public:
  explicit MlpModel(const MlpConfig& config, const LoraConfig& lora = {});
  torch::nn::Module& module() override { return *mlp_; }
  Batch MakeBatch(int64_t micro_batch) override;
  torch::Tensor Loss(const Batch& batch) override;

 private:
  MlpConfig config_;
  Mlp mlp_;
};

}  // namespace memprof
