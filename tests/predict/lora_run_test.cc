// LoRA adapters on one rank: the run measured against its prediction
// (lora_checks.h), and the adapted model itself: it starts as the frozen
// base (B is zero) and its loss falls as the adapters train.
#include <gtest/gtest.h>

#include "models/model.h"
#include "profiler/base/human_bytes.h"
#include "tests/predict/lora_checks.h"
#include "tests/preset_config.h"
#include "tests/run_command.h"
#include "tests/temp_dir.h"

namespace memprof {
namespace {

class LoraRun : public ::testing::TestWithParam<LoraRunCase> {};

TEST_P(LoraRun, AdaptersAloneHoldGradientsStateAndBuckets) {
  const LoraRunCase& c = GetParam();
  const TempDir dir;
  const CommandResult r =
      RunMemprof("profile --config " MEMPROF_SOURCE_DIR "/configs/" + c.preset +
                 ".ini --steps 3 --quiet" + LoraFlags(c) + " --out " +
                 dir.path().string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ExpectLoraRunHolds(ReadRankReport(RankReportPath(dir.path(), 0)), c);
  // The console states the split.
  EXPECT_NE(r.output.find("adapters " + GroupedInteger(c.adapters) +
                          " parameters trained (20 bytes each"),
            std::string::npos)
      << r.output;
}

INSTANTIATE_TEST_SUITE_P(RankFourOnTwoTargets, LoraRun,
                         ::testing::ValuesIn(TwoTargets()));
INSTANTIATE_TEST_SUITE_P(WithDropout, LoraRun,
                         ::testing::ValuesIn(TwoTargetsWithDropout()));

// The logits of a model built from `config` (seed 0) on a fixed batch.
torch::Tensor Logits(const RunConfig& config, const Batch& batch) {
  torch::manual_seed(0);
  std::unique_ptr<TrainableModel> model = BuildModel(config);
  torch::NoGradGuard no_grad;
  return model->Loss(batch);
}

TEST(LoraModel, StepZeroIsTheFrozenBaseModel) {
  for (const char* preset : {"llama-tiny", "gpt-tiny", "mlp-tiny"}) {
    SCOPED_TRACE(preset);
    const RunConfig base = PresetConfig(preset);
    const char* targets = std::string(preset) == "llama-tiny" ? "q_proj,v_proj"
                          : std::string(preset) == "gpt-tiny"
                              ? "c_attn,attn.c_proj"
                              : "layers.0,layers.6";
    const RunConfig adapted =
        PresetConfig(preset, {"--lora-rank", "4", "--lora-targets", targets});
    torch::manual_seed(1);
    std::unique_ptr<TrainableModel> data = BuildModel(base);
    const Batch batch = data->MakeBatch(2);
    // The same base weights (the adapters are drawn after them), and B = 0:
    // the adapted model's loss is the base model's.
    const double plain = Logits(base, batch).item<double>();
    const double with_adapters = Logits(adapted, batch).item<double>();
    EXPECT_NEAR(with_adapters, plain, 1e-6);
  }
}

TEST(LoraModel, TheLossFallsAsTheAdaptersTrainAndTheBaseStaysAsItWas) {
  const RunConfig config = PresetConfig(
      "llama-tiny", {"--lora-rank", "4", "--lora-targets", "q_proj,v_proj"});
  torch::manual_seed(0);
  std::unique_ptr<TrainableModel> model = BuildModel(config);
  std::vector<torch::Tensor> trained, frozen;
  for (const auto& item : model->module().named_parameters()) {
    (item.value().requires_grad() ? trained : frozen)
        .push_back(item.value().detach().clone());
  }
  ASSERT_EQ(trained.size(), 8u);  // A and B of 2 targets in 2 layers
  std::vector<torch::Tensor> params;
  for (const torch::Tensor& p : model->module().parameters()) {
    if (p.requires_grad()) params.push_back(p);
  }
  torch::optim::Adam adam(params, torch::optim::AdamOptions(1e-2));
  const Batch batch = model->MakeBatch(4);
  std::vector<double> losses;
  for (int step = 0; step < 20; ++step) {
    adam.zero_grad();
    torch::Tensor loss = model->Loss(batch);
    loss.backward();
    adam.step();
    losses.push_back(loss.item<double>());
  }
  EXPECT_LT(losses.back(), losses.front() - 0.1)
      << "from " << losses.front() << " to " << losses.back();
  size_t i = 0;
  for (const auto& item : model->module().named_parameters()) {
    if (item.value().requires_grad()) continue;
    EXPECT_TRUE(torch::equal(item.value(), frozen[i++])) << item.key();
  }
}

}  // namespace
}  // namespace memprof
