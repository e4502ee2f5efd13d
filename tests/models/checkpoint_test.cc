// Checkpointed blocks (models/checkpoint.h) compute what the plain blocks
// compute: from the same seed, the same loss and the same gradients (within
// 1e-6 relative), with dropout drawing the same masks in the rerun, and
// BatchNorm's running statistics updated once per step, not twice; under
// bf16-autocast the rerun autocasts as the forward did, and in bfloat16
// it runs in bfloat16.
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "models/autocast_region.h"
#include "models/checkpoint.h"
#include "models/model.h"
#include "profiler/cli/config_cli.h"
#include "tests/preset_config.h"

namespace memprof {
namespace {

struct Step {
  double loss = 0;
  std::vector<std::pair<std::string, torch::Tensor>> gradients;
  std::vector<std::pair<std::string, torch::Tensor>> buffers;
};

// One forward and backward from `seed`: the model's initial weights, the
// batch and every dropout mask are drawn from it.
Step RunOnce(RunConfig config, const std::string& checkpointing,
             int64_t micro_batch) {
  config.train.activation_checkpointing = checkpointing;
  torch::manual_seed(7);
  std::unique_ptr<TrainableModel> model = BuildModel(config);
  model->module().train();
  const Batch batch = model->MakeBatch(micro_batch);
  torch::Tensor loss;
  {
    AutocastRegion region(
        torch::kCPU, {config.train.dtype == "bf16-autocast", torch::kBFloat16});
    loss = model->Loss(batch);
  }
  loss.backward();
  Step step;
  step.loss = loss.item<double>();
  for (const auto& p : model->module().named_parameters()) {
    step.gradients.emplace_back(p.key(), p.value().grad().clone());
  }
  for (const auto& b : model->module().named_buffers()) {
    step.buffers.emplace_back(b.key(), b.value().clone());
  }
  return step;
}

// Largest |a - b| over max |b|, over every element.
double RelativeError(const torch::Tensor& a, const torch::Tensor& b) {
  const double scale = b.abs().max().item<double>();
  const double diff = (a - b).abs().max().item<double>();
  return scale == 0 ? diff : diff / scale;
}

struct CheckpointCase {
  std::string preset;
  std::vector<std::string> extra;
  int64_t micro_batch;
};

void PrintTo(const CheckpointCase& c, std::ostream* os) {
  *os << c.preset << " at micro-batch " << c.micro_batch;
  for (const std::string& word : c.extra) *os << " " << word;
}

class CheckpointedBlocks : public ::testing::TestWithParam<CheckpointCase> {};

TEST_P(CheckpointedBlocks, GiveThePlainGradients) {
  const CheckpointCase& c = GetParam();
  const RunConfig config = PresetConfig(c.preset, c.extra);
  const Step plain = RunOnce(config, "none", c.micro_batch);
  const Step checkpointed = RunOnce(config, "blocks", c.micro_batch);
  EXPECT_NEAR(checkpointed.loss, plain.loss, 1e-6 * std::abs(plain.loss));
  ASSERT_EQ(checkpointed.gradients.size(), plain.gradients.size());
  double worst = 0;
  for (size_t i = 0; i < plain.gradients.size(); ++i) {
    const auto& [name, g] = plain.gradients[i];
    ASSERT_EQ(checkpointed.gradients[i].first, name);
    const double error = RelativeError(checkpointed.gradients[i].second, g);
    EXPECT_LE(error, 1e-6) << name;
    worst = std::max(worst, error);
  }
  // BatchNorm's running statistics and counters: updated once, as plain.
  ASSERT_EQ(checkpointed.buffers.size(), plain.buffers.size());
  for (size_t i = 0; i < plain.buffers.size(); ++i) {
    const auto& [name, b] = plain.buffers[i];
    EXPECT_TRUE(torch::allclose(checkpointed.buffers[i].second, b)) << name;
  }
  RecordProperty("worst_relative_error", std::to_string(worst));
}

INSTANTIATE_TEST_SUITE_P(
    TinyConfigs, CheckpointedBlocks,
    ::testing::Values(
        CheckpointCase{"gpt-tiny", {}, 2},
        CheckpointCase{"gpt-tiny", {"--gpt.dropout", "0.1"}, 2},
        CheckpointCase{"gpt-tiny", {"--gpt.dropout", "0.1"}, 5},
        CheckpointCase{"resnet-tiny", {}, 2},
        CheckpointCase{"resnet-tiny", {}, 1},
        CheckpointCase{
            "gpt-tiny",
            {"--gpt.dropout", "0.1", "--train.dtype", "bf16-autocast"},
            2},
        CheckpointCase{"gpt-tiny",
                       {"--gpt.dropout", "0.1", "--train.dtype", "bfloat16"},
                       2},
        CheckpointCase{"llama-tiny", {}, 2}, CheckpointCase{"llama-odd", {}, 1},
        CheckpointCase{"llama-odd", {"--train.dtype", "bf16-autocast"}, 2},
        CheckpointCase{"llama-tiny", {"--train.dtype", "bfloat16"}, 2},
        CheckpointCase{"resnet-tiny", {"--train.dtype", "bf16-autocast"}, 2},
        CheckpointCase{"resnet-tiny", {"--train.dtype", "bfloat16"}, 2}),
    [](const ::testing::TestParamInfo<CheckpointCase>& info) {
      std::string name =
          info.param.preset + "_b" + std::to_string(info.param.micro_batch);
      for (size_t i = 0; i + 1 < info.param.extra.size(); i += 2) {
        name += info.param.extra[i] == "--gpt.dropout"
                    ? "_dropout"
                    : "_" + info.param.extra[i + 1];
      }
      for (char& ch : name) {
        if (ch == '-') ch = '_';
      }
      return name;
    });

// Without restoring the random state the rerun would draw other dropout
// masks: the test above would then fail. Shown directly: a block whose
// output is a dropout mask, checkpointed, gets the gradient of the mask
// its forward drew.
TEST(Checkpoint, TheRerunDrawsTheForwardsDropoutMask) {
  torch::manual_seed(3);
  const torch::Tensor w = torch::ones({1000}, torch::requires_grad());
  const torch::Tensor x = w * 1.0;
  const torch::Tensor y = Checkpoint(
      [](const torch::Tensor& in, bool) {
        return torch::dropout(in, /*p=*/0.5, /*train=*/true);
      },
      x);
  // Draw more numbers between forward and backward, as later layers do.
  (void)torch::rand({4096});
  y.sum().backward();
  // dropout scales kept elements by 2: the gradient is exactly the mask * 2.
  EXPECT_TRUE(torch::equal(w.grad(), (y.detach() != 0).to(torch::kFloat) * 2));
  EXPECT_GT(y.detach().eq(0).sum().item<int64_t>(), 400);
}

}  // namespace
}  // namespace memprof
