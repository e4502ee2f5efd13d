// ResNet (He et al. 2015) in the LibTorch C++ API, as torchvision's v1.5:
// basic blocks (depth 18, 34) or bottleneck blocks with the stride in the
// 3x3 convolution (50, 101, 152), BatchNorm after every convolution, ReLU in
// place. Names follow torchvision ("layer1.0.conv1.weight"); BatchNorm
// running statistics are module buffers. models/resnet_table.cc is its size
// table.
#pragma once

#include <torch/torch.h>

#include "models/model.h"

namespace memprof {

class ResnetBlockImpl : public torch::nn::Module {
 public:
  ResnetBlockImpl(bool bottleneck, int64_t in, int64_t width, int64_t stride);
  // update_statistics false: BatchNorm normalizes by the batch's statistics
  // without updating its running ones (a checkpointed block's rerun).
  torch::Tensor forward(const torch::Tensor& x, bool update_statistics = true);

 private:
  std::vector<std::pair<torch::nn::Conv2d, torch::nn::BatchNorm2d>> layers_;
  torch::nn::Sequential downsample_{nullptr};
};
TORCH_MODULE(ResnetBlock);

class ResnetImpl : public torch::nn::Module {
 public:
  // checkpoint_blocks: each residual block runs checkpointed
  // (models/checkpoint.h).
  ResnetImpl(const ResnetConfig& config, bool checkpoint_blocks);
  // images: [B, 3, R, R] -> logits [B, classes].
  torch::Tensor forward(const torch::Tensor& images);

 private:
  bool checkpoint_blocks_;
  torch::nn::Conv2d conv1_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr};
  std::vector<torch::nn::Sequential> stages_;
  torch::nn::Linear fc_{nullptr};
};
TORCH_MODULE(Resnet);

class ResnetModel final : public TrainableModel {
 public:
  ResnetModel(const ResnetConfig& config, bool checkpoint_blocks);
  torch::nn::Module& module() override { return *resnet_; }
  // Random images and class labels.
  Batch MakeBatch(int64_t micro_batch) override;
  torch::Tensor Loss(const Batch& batch) override;

 private:
  ResnetConfig config_;
  Resnet resnet_;
};

}  // namespace memprof
