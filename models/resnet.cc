#include "models/resnet.h"

#include <string>

#include "models/checkpoint.h"
#include "models/resnet_table.h"
#include "models/scope_observer.h"

namespace memprof {
namespace nn = torch::nn;
namespace {

nn::Conv2d Conv(int64_t in, int64_t out, int64_t kernel, int64_t stride) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, kernel)
                        .stride(stride)
                        .padding(kernel / 2)
                        .bias(false));
}

}  // namespace

ResnetBlockImpl::ResnetBlockImpl(bool bottleneck, int64_t in, int64_t width,
                                 int64_t stride) {
  // (in, out, kernel, stride) of each convolution, torchvision v1.5.
  struct Spec {
    int64_t in, out, kernel, stride;
  };
  const int64_t out = bottleneck ? 4 * width : width;
  const std::vector<Spec> specs =
      bottleneck
          ? std::vector<Spec>{{in, width, 1, 1},
                              {width, width, 3, stride},
                              {width, out, 1, 1}}
          : std::vector<Spec>{{in, width, 3, stride}, {width, width, 3, 1}};
  for (size_t i = 0; i < specs.size(); ++i) {
    const Spec& s = specs[i];
    const std::string n = std::to_string(i + 1);
    auto conv =
        register_module("conv" + n, Conv(s.in, s.out, s.kernel, s.stride));
    auto bn = register_module("bn" + n, nn::BatchNorm2d(s.out));
    layers_.emplace_back(conv, bn);
  }
  if (stride != 1 || in != out) {
    downsample_ = register_module(
        "downsample", nn::Sequential(Conv(in, out, /*kernel=*/1, stride),
                                     nn::BatchNorm2d(out)));
  }
}

namespace {

// bn(x) in training mode; without its running statistics when
// !update_statistics (the same kernel, the same saved tensors).
torch::Tensor Normalize(nn::BatchNorm2dImpl& bn, const torch::Tensor& x,
                        bool update_statistics) {
  if (update_statistics) return bn.forward(x);
  const auto& o = bn.options;
  return torch::batch_norm(x, bn.weight, bn.bias, /*running_mean=*/{},
                           /*running_var=*/{}, /*training=*/true,
                           o.momentum().value_or(0.1), o.eps(),
                           at::globalContext().userEnabledCuDNN());
}

}  // namespace

torch::Tensor ResnetBlockImpl::forward(const torch::Tensor& x,
                                       bool update_statistics) {
  torch::Tensor y = x;
  for (size_t i = 0; i < layers_.size(); ++i) {
    y = Normalize(*layers_[i].second, layers_[i].first(y), update_statistics);
    if (i + 1 < layers_.size()) y.relu_();
  }
  if (downsample_) {
    y += Normalize(*downsample_->ptr(1)->as<nn::BatchNorm2d>(),
                   downsample_->ptr(0)->as<nn::Conv2d>()->forward(x),
                   update_statistics);
  } else {
    y += x;
  }
  return y.relu_();
}

ResnetImpl::ResnetImpl(const ResnetConfig& c, bool checkpoint_blocks)
    : checkpoint_blocks_(checkpoint_blocks) {
  const ResnetStages stages = *ResnetStagesOf(c.depth);
  conv1_ = register_module(
      "conv1",
      nn::Conv2d(
          nn::Conv2dOptions(3, c.width, 7).stride(2).padding(3).bias(false)));
  bn1_ = register_module("bn1", nn::BatchNorm2d(c.width));
  int64_t in = c.width;
  for (int stage = 0; stage < 4; ++stage) {
    const int64_t width = c.width << stage;
    nn::Sequential blocks;
    for (int64_t j = 0; j < stages.blocks[stage]; ++j) {
      const int64_t stride = (stage > 0 && j == 0) ? 2 : 1;
      blocks->push_back(ResnetBlock(stages.bottleneck, in, width, stride));
      in = width * stages.expansion();
    }
    stages_.push_back(
        register_module("layer" + std::to_string(stage + 1), blocks));
  }
  fc_ = register_module("fc", nn::Linear(in, c.classes));
}

torch::Tensor ResnetImpl::forward(const torch::Tensor& images) {
  torch::Tensor x = bn1_(conv1_(images)).relu_();
  x = torch::max_pool2d(x, /*kernel_size=*/3, /*stride=*/2, /*padding=*/1);
  for (size_t s = 0; s < stages_.size(); ++s) {
    nn::Sequential& stage = stages_[s];
    for (size_t i = 0; i < stage->size(); ++i) {
      ResnetBlockImpl* block = stage->ptr(i)->as<ResnetBlock>();
      const std::string scope =
          "layer" + std::to_string(s + 1) + "." + std::to_string(i);
      if (checkpoint_blocks_) {
        x = Checkpoint(
            [block, scope](const torch::Tensor& in, bool recomputing) {
              const ModelScope named(scope);
              return block->forward(in, /*update_statistics=*/!recomputing);
            },
            x);
      } else {
        const ModelScope named(scope);
        x = block->forward(x);
      }
    }
  }
  x = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
  return fc_(x);
}

ResnetModel::ResnetModel(const ResnetConfig& config, bool checkpoint_blocks)
    : config_(config), resnet_(config, checkpoint_blocks) {}

Batch ResnetModel::MakeBatch(int64_t micro_batch) {
  return Batch{
      torch::randn({micro_batch, 3, config_.resolution, config_.resolution},
                   torch::dtype(float_dtype())),
      torch::randint(config_.classes, {micro_batch}, torch::kLong)};
}

torch::Tensor ResnetModel::Loss(const Batch& batch) {
  return torch::nn::functional::cross_entropy(resnet_->forward(batch.input),
                                              batch.target);
}

}  // namespace memprof
