// The tests that tests/gtest/limit_test.cc runs as a child binary, built
// with memprof::gtest_main as a user's would be. Several fail on purpose:
// the parent checks their messages and exit codes. Sizes are exact byte
// counts of float32 tensors (4 bytes an element).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdio>
#include <vector>

#include <memprof/gtest.h>

namespace {

constexpr int64_t kMiB = 1024 * 1024;
constexpr int64_t kFloatsPerMiB = kMiB / 4;

// A tensor of `mib` MiB.
torch::Tensor Mebibytes(int64_t mib) {
  return torch::ones({mib * kFloatsPerMiB});
}

// A step of a two-layer model under the session's marks: weights and
// gradients tracked, the hidden layer's output kept for backward.
void TrainStep(memprof::Session& session, int64_t batch) {
  torch::manual_seed(0);
  torch::nn::Sequential net(torch::nn::Linear(64, 256), torch::nn::ReLU(),
                            torch::nn::Linear(256, 10));
  session.Track(*net);
  auto step = session.Step();
  torch::Tensor x, loss;
  {
    auto mark = session.Inputs();
    x = torch::randn({batch, 64});
    session.TrackInputs({x});
  }
  {
    auto mark = session.Forward();
    auto scope = session.Scope("net");
    loss = net->forward(x).sum();
  }
  {
    auto mark = session.Backward();
    loss.backward();
  }
}

TEST(Child, TwoMiBOverOneMiB) {
  memprof::testing::MemoryLimit limit("1MiB");
  auto scope = limit.session().Scope("buffer");
  torch::Tensor a = Mebibytes(2);
  torch::Tensor b = Mebibytes(2);  // the peak: 4 MiB
}

TEST(Child, ActivationsOverTheirLimit) {
  memprof::testing::MemoryLimit limit("64MiB");
  limit.Category("activations", 16 * 1024);
  TrainStep(limit.session(), /*batch=*/32);
}

TEST(Child, StepUnderItsLimits) {
  memprof::testing::MemoryLimit limit("1MiB");
  limit.Category("activations", "128KiB").NoLeaks();
  TrainStep(limit.session(), /*batch=*/32);
}

std::vector<torch::Tensor>& Cache() {
  static std::vector<torch::Tensor> cache;
  return cache;
}

TEST(Child, KeepsOneMiBInACache) {
  memprof::testing::LeakCheck leaks;
  auto scope = leaks.session().Scope("cache.fill");
  Cache().push_back(Mebibytes(1));
  torch::Tensor freed = Mebibytes(3);
}

TEST(Child, TrackedModelIsNoLeak) {
  torch::nn::Linear kept{nullptr};
  {
    memprof::testing::LeakCheck leaks;
    kept = torch::nn::Linear(256, 256);
    leaks.session().Track(*kept);
  }
}

TEST(Child, NoTensor) {
  memprof::testing::MemoryLimit limit(1);
  limit.NoLeaks();
  EXPECT_EQ(limit.session().rank(), 0);
}

TEST(Child, FatalOverTheLimit) {
  {
    memprof::testing::MemoryLimit limit(kMiB,
                                        memprof::testing::Failure::kFatal);
    torch::Tensor a = Mebibytes(2);
  }
  std::printf("fatal failure recorded: %s\n",
              ::testing::Test::HasFatalFailure() ? "yes" : "no");
}

TEST(Child, ModelMadeBeforeTheLimit) {
  torch::nn::Linear net(64, 64);
  memprof::testing::MemoryLimit limit("1MiB");
  limit.session().Track(*net);
}

TEST(Child, ACategoryLimitedTwice) {
  memprof::testing::MemoryLimit limit("1MiB");
  limit.Category("activations", "64KiB").Category("activations", "128KiB");
}

TEST(Child, NotASize) { memprof::testing::MemoryLimit limit("64 bananas"); }

TEST(Child, TwoAtOnce) {
  memprof::testing::MemoryLimit limit("1MiB");
  memprof::testing::LeakCheck leaks;
}

}  // namespace
