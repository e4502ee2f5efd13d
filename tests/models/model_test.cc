// The models and their size tables: the table's parameter and buffer rows
// are the built module's, name by name and shape by shape; and a profiled
// run (one rank, in this process) meets its prediction at micro-batches 1,
// 2 and 5.
#include <algorithm>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "models/model.h"
#include "models/size_table.h"
#include "profiler/cli/config_cli.h"
#include "tests/predict/prediction_checks.h"
#include "tests/preset_config.h"
#include "tests/train/solo_run.h"

namespace memprof {
namespace {

void ExpectRowsAre(
    const SizeTable& table, RowKind kind,
    const torch::OrderedDict<std::string, torch::Tensor>& named) {
  std::vector<const SizeRow*> rows;
  for (const SizeRow& row : table.rows) {
    if (row.kind == kind) rows.push_back(&row);
  }
  ASSERT_EQ(rows.size(), named.size());
  int64_t elements = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const torch::Tensor& t = named[i].value();
    EXPECT_EQ(rows[i]->name, named[i].key());
    EXPECT_EQ(rows[i]->shape, t.sizes().vec()) << named[i].key();
    EXPECT_EQ(rows[i]->Bytes(),
              t.numel() * static_cast<int64_t>(t.element_size()))
        << named[i].key();
    elements += t.numel();
  }
  EXPECT_EQ(table.Elements(kind), elements);
}

struct ModelCase {
  std::string preset;
  std::vector<std::string> extra;
};

void PrintTo(const ModelCase& c, std::ostream* os) {
  *os << c.preset;
  for (const std::string& word : c.extra) *os << " " << word;
}

class TableMatchesModule : public ::testing::TestWithParam<ModelCase> {};

TEST_P(TableMatchesModule, NamesShapesAndCounts) {
  const RunConfig config = PresetConfig(GetParam().preset, GetParam().extra);
  const std::unique_ptr<TrainableModel> model = BuildModel(config);
  const SizeTable table = BuildSizeTable(config, /*micro_batch=*/1);
  ExpectRowsAre(table, RowKind::kParameter, model->module().named_parameters());
  ExpectRowsAre(table, RowKind::kBuffer, model->module().named_buffers());
}

INSTANTIATE_TEST_SUITE_P(
    Models, TableMatchesModule,
    ::testing::Values(
        ModelCase{"mlp-tiny", {}},
        ModelCase{"mlp-tiny", {"--mlp.depth", "1", "--mlp.input", "7"}},
        ModelCase{"gpt-tiny", {}},
        ModelCase{"gpt-tiny",
                  {"--gpt.layers", "3", "--gpt.d_model", "48", "--gpt.heads",
                   "6", "--gpt.seq_len", "17", "--gpt.vocab", "101"}},
        ModelCase{"resnet-tiny", {}},
        ModelCase{"resnet-tiny", {"--resnet.depth", "34"}},
        ModelCase{"resnet-tiny", {"--resnet.depth", "50"}},
        ModelCase{"resnet-tiny",
                  {"--resnet.depth", "101", "--resnet.width", "4",
                   "--resnet.classes", "3"}}));

TEST(Models, GptOutputProjectionIsTheTokenEmbedding) {
  const RunConfig config = PresetConfig("gpt-tiny", {});
  const std::unique_ptr<TrainableModel> model = BuildModel(config);
  const Batch batch = model->MakeBatch(2);
  model->Loss(batch).backward();
  // One parameter, two uses: its gradient holds both contributions and no
  // separate lm_head weight exists.
  const auto named = model->module().named_parameters();
  EXPECT_EQ(named.find("lm_head.weight"), nullptr);
  EXPECT_TRUE(named["wte.weight"].grad().defined());
}

TEST(Models, ResnetBatchNormStatisticsAreBuffersThatTrainingUpdates) {
  const RunConfig config = PresetConfig("resnet-tiny", {});
  const std::unique_ptr<TrainableModel> model = BuildModel(config);
  const torch::Tensor before =
      model->module().named_buffers()["bn1.running_mean"].clone();
  model->Loss(model->MakeBatch(2));
  EXPECT_FALSE(torch::equal(
      before, model->module().named_buffers()["bn1.running_mean"]));
  EXPECT_EQ(model->module()
                .named_buffers()["bn1.num_batches_tracked"]
                .item<int64_t>(),
            1);
}

// One rank, in this process: what ExpectPredictionHolds requires.
struct RunCase {
  std::string preset;
  int64_t micro_batch;
  std::vector<std::string> extra = {};
};

std::string Label(const RunCase& c) {
  std::string label =
      c.preset + " at micro-batch " + std::to_string(c.micro_batch);
  for (const std::string& word : c.extra) label += " " + word;
  return label;
}

void PrintTo(const RunCase& c, std::ostream* os) { *os << Label(c); }

// gpt_tiny_b2, gpt_tiny_b2_checkpointed, gpt_tiny_b2_checkpointed_dropout,
// mlp_tiny_b2_sgd_momentum.
std::string CaseName(const ::testing::TestParamInfo<RunCase>& info) {
  std::string name =
      info.param.preset + "_b" + std::to_string(info.param.micro_batch);
  const auto has = [&info](const char* word) {
    const auto& extra = info.param.extra;
    return std::find(extra.begin(), extra.end(), word) != extra.end();
  };
  if (has("blocks")) name += "_checkpointed";
  if (has("--gpt.dropout")) name += "_dropout";
  if (has("--train.momentum")) name += "_sgd_momentum";
  for (char& ch : name) {
    if (ch == '-') ch = '_';
  }
  return name;
}

class PredictionMatchesMeasurement : public ::testing::TestWithParam<RunCase> {
};

TEST_P(PredictionMatchesMeasurement, OneRank) {
  const RunCase& c = GetParam();
  std::vector<std::string> args = {
      "--micro-batch", std::to_string(c.micro_batch), "--steps", "3"};
  args.insert(args.end(), c.extra.begin(), c.extra.end());
  const RankRun report = RunSolo(PresetConfig(c.preset, args));
  ExpectPredictionHolds(ReportOf(report), Label(c));
}

// Checkpointed blocks: the activations held from forward into backward
// (the blocks' inputs) and their peak with one block rerun, both to the
// table's prediction.
const std::vector<std::string> kMomentumSgd = {"--train.optimizer", "sgd",
                                               "--train.momentum", "0.9"};
const std::vector<std::string> kCheckpointed = {
    "--train.activation_checkpointing", "blocks"};

class CheckpointedActivations : public ::testing::TestWithParam<RunCase> {};

TEST_P(CheckpointedActivations, HeldFromForwardIntoBackwardAsPredicted) {
  const RunCase& c = GetParam();
  std::vector<std::string> args = {
      "--micro-batch", std::to_string(c.micro_batch), "--steps", "3"};
  args.insert(args.end(), c.extra.begin(), c.extra.end());
  const RankReport report = ReportOf(RunSolo(PresetConfig(c.preset, args)));
  ASSERT_TRUE(report.checkpointing.has_value());
  const int64_t held = report.checkpointing->held_bytes;
  const int64_t predicted = report.checkpointing->predicted_held_bytes;
  EXPECT_LE(std::llabs(held - predicted), predicted * 3 / 100)
      << "held " << held << ", predicted " << predicted;
  // The rerun adds one block's saved tensors on top of what is held.
  EXPECT_GT(report.Of(Category::kActivations).peak_bytes, held);
  // Plain, the same model holds more from forward into backward.
  const RankReport plain = ReportOf(RunSolo(PresetConfig(
      c.preset,
      {"--micro-batch", std::to_string(c.micro_batch), "--steps", "3"})));
  EXPECT_FALSE(plain.checkpointing.has_value());
  EXPECT_LT(held, plain.Of(Category::kActivations).peak_bytes);
}

INSTANTIATE_TEST_SUITE_P(
    TinyConfigs, PredictionMatchesMeasurement,
    ::testing::Values(RunCase{"mlp-tiny", 1}, RunCase{"mlp-tiny", 2},
                      RunCase{"mlp-tiny", 5}, RunCase{"gpt-tiny", 1},
                      RunCase{"gpt-tiny", 2}, RunCase{"gpt-tiny", 5},
                      RunCase{"resnet-tiny", 1}, RunCase{"resnet-tiny", 2},
                      RunCase{"resnet-tiny", 5},
                      RunCase{"gpt-tiny", 1, kCheckpointed},
                      RunCase{"gpt-tiny", 2, kCheckpointed},
                      RunCase{"gpt-tiny", 5, kCheckpointed},
                      RunCase{"gpt-tiny",
                              2,
                              {"--train.activation_checkpointing", "blocks",
                               "--gpt.dropout", "0.1"}},
                      RunCase{"resnet-tiny", 1, kCheckpointed},
                      RunCase{"resnet-tiny", 2, kCheckpointed},
                      RunCase{"resnet-tiny", 5, kCheckpointed},
                      // SGD's peak is in backward, at a hidden layer's.
                      RunCase{"mlp-tiny", 1, kMomentumSgd},
                      RunCase{"mlp-tiny", 2, kMomentumSgd},
                      RunCase{"mlp-tiny", 5, kMomentumSgd}),
    CaseName);

INSTANTIATE_TEST_SUITE_P(
    TinyConfigs, CheckpointedActivations,
    ::testing::Values(RunCase{"gpt-tiny", 1, kCheckpointed},
                      RunCase{"gpt-tiny", 5, kCheckpointed},
                      RunCase{"resnet-tiny", 1, kCheckpointed},
                      RunCase{"resnet-tiny", 5, kCheckpointed}),
    CaseName);

}  // namespace
}  // namespace memprof
