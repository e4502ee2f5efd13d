// The example's own test: its model's training step under memory limits,
// and leaking nothing. Built with memprof::gtest_main, which installs
// memprof's hook before any tensor and runs the tests.
#include <gtest/gtest.h>
#include <memprof/gtest.h>
#include <torch/torch.h>

#include "net.h"

namespace {

constexpr int64_t kMicroBatch = 8;  // images per step
constexpr int64_t kWidth = 16;      // conv2's output channels
constexpr int kSteps = 2;           // the second step's peak is the steady one

// Training steps of the example's model, marked as the program marks them.
void Train(memprof::Session& session) {
  torch::manual_seed(0);
  Net net(kWidth);
  torch::optim::AdamW optimizer(net->parameters(),
                                torch::optim::AdamWOptions(1e-3));
  session.Track(*net);       // weights and gradients
  session.Track(optimizer);  // optimizer_state
  for (int i = 0; i < kSteps; ++i) {
    auto step = session.Step();
    torch::Tensor images, labels, loss;
    {
      auto mark = session.Inputs();
      images = torch::randn({kMicroBatch, 1, kImageSide, kImageSide});
      labels = torch::randint(kClasses, {kMicroBatch}, torch::kLong);
      session.TrackInputs({images, labels});
    }
    {
      auto mark = session.Forward();  // what it keeps: activations
      loss = torch::nll_loss(net->forward(images, session), labels);
    }
    {
      auto mark = session.Backward();
      loss.backward();
    }
    {
      auto mark = session.OptimizerStep();
      optimizer.step();
    }
    {
      auto mark = session.ZeroGrad();
      optimizer.zero_grad(/*set_to_none=*/false);
    }
  }
}

TEST(OwnLoopNet, TrainingStaysUnderItsLimits) {
  memprof::testing::MemoryLimit limit("320KiB");  // all categories together
  limit.Category("activations", "192KiB");
  Train(limit.session());
}

TEST(OwnLoopNet, TrainingLeaksNothing) {
  memprof::testing::LeakCheck leaks;
  Train(leaks.session());
}

}  // namespace
