// The example's model, shared by the program (main.cc) and its test
// (own_loop_test.cc): a small CNN for 1 x 16 x 16 images and 10 classes.
#pragma once

#include <memprof/memprof.h>
#include <torch/torch.h>

constexpr int64_t kImageSide = 16;     // inputs: 1 x 16 x 16 images
constexpr int64_t kClasses = 10;       // targets: class indices
constexpr int64_t kConv1Channels = 8;  // conv1: 1 -> 8 channels

// conv1 -> relu -> pool -> conv2 -> relu -> pool -> fc, one named scope per
// layer so that the reports show each layer's activations.
struct NetImpl : torch::nn::Module {
  explicit NetImpl(int64_t width)
      : conv1(register_module(
            "conv1",
            torch::nn::Conv2d(torch::nn::Conv2dOptions(1, kConv1Channels,
                                                       /*kernel_size=*/3)
                                  .padding(1)))),
        conv2(register_module(
            "conv2",
            torch::nn::Conv2d(torch::nn::Conv2dOptions(kConv1Channels, width,
                                                       /*kernel_size=*/3)
                                  .padding(1)))),
        fc(register_module(
            "fc", torch::nn::Linear(width * (kImageSide / 4) * (kImageSide / 4),
                                    kClasses))) {}

  torch::Tensor forward(torch::Tensor x, memprof::Session& session) {
    {
      auto scope = session.Scope("conv1");
      x = torch::max_pool2d(torch::relu(conv1(x)), /*kernel_size=*/2);
    }
    {
      auto scope = session.Scope("conv2");
      x = torch::max_pool2d(torch::relu(conv2(x)), /*kernel_size=*/2);
    }
    auto scope = session.Scope("fc");
    return torch::log_softmax(fc(x.flatten(1)), /*dim=*/1);
  }

  torch::nn::Conv2d conv1;
  torch::nn::Conv2d conv2;
  torch::nn::Linear fc;
};
TORCH_MODULE(Net);
