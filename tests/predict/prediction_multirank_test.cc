// Two ranks through the launcher: every rank meets its prediction, for each
// CI-sized model at micro-batches 1, 2 and 5, and with the gradients as
// bucket views, with checkpointed blocks, in bf16-autocast and bfloat16,
// and with gradient accumulation beside each other lever (checkpointing,
// autocast, ZeRO-1, LoRA).
#include <cctype>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/predict/prediction_checks.h"
#include "tests/run_command.h"
#include "tests/temp_dir.h"

namespace memprof {
namespace {

namespace fs = std::filesystem;

struct TwoRankCase {
  std::string preset;
  int64_t micro_batch;
  std::string extra;
};

void PrintTo(const TwoRankCase& c, std::ostream* os) {
  *os << c.preset << " at micro-batch " << c.micro_batch << " " << c.extra;
}

class TwoRankPrediction : public ::testing::TestWithParam<TwoRankCase> {};

constexpr const char* kCheckpointed = "--train.activation_checkpointing blocks";
constexpr const char* kAutocast = "--train.dtype bf16-autocast";
constexpr const char* kBfloat16 = "--train.dtype bfloat16";
constexpr const char* kCheckpointedAutocast =
    "--train.dtype bf16-autocast --train.activation_checkpointing blocks";

// Where oneDNN's bfloat16 scratchpads are not predicted
// (prediction_checks.h): every bfloat16 run, GPT's too (gpt-tiny in
// bfloat16 at micro-batch 2 measures 4.68% over its prediction at two
// ranks, 5.24% at one, on an AMX CPU).
bool ScratchUnpredicted(const std::string& extra) {
  return extra.find("--train.dtype") != std::string::npos;
}

// Llama's table earns tighter bands (tests/models/model_test.cc runs its
// whole matrix at one rank).
Band BandOf(const std::string& preset) {
  return preset.rfind("llama-", 0) == 0 ? Band{1, 3} : Band{};
}

TEST_P(TwoRankPrediction, EveryRankMeetsItsPrediction) {
  const TwoRankCase& c = GetParam();
  const TempDir temp_dir;
  const fs::path& dir = temp_dir.path();
  const CommandResult r = RunMemprof(
      "profile --config " MEMPROF_SOURCE_DIR "/configs/" + c.preset +
      ".ini --world-size 2 --steps 3 --micro-batch " +
      std::to_string(c.micro_batch) + " " + c.extra + " --out " + dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (int rank = 0; rank < 2; ++rank) {
    const RankReport report = ReadRankReport(RankReportPath(dir, rank));
    EXPECT_EQ(report.context.world_size, 2);
    ExpectPredictionHolds(report,
                          c.preset + " at micro-batch " +
                              std::to_string(c.micro_batch) + " " + c.extra,
                          ScratchUnpredicted(c.extra), BandOf(c.preset));
  }
  // The printed table carries the error column.
  EXPECT_NE(r.output.find("predicted"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("error"), std::string::npos) << r.output;
}

INSTANTIATE_TEST_SUITE_P(
    TinyConfigs, TwoRankPrediction,
    ::testing::Values(
        TwoRankCase{"mlp-tiny", 1, ""}, TwoRankCase{"mlp-tiny", 2, ""},
        TwoRankCase{"mlp-tiny", 5, ""},
        // Large enough that a ReLU's backward, not a Linear's, peaks (Note
        // [MLP backward moments]).
        TwoRankCase{"mlp-tiny", 1024, ""},
        TwoRankCase{"mlp-tiny", 1024, "--train.optimizer sgd"},
        TwoRankCase{"gpt-tiny", 1, ""}, TwoRankCase{"gpt-tiny", 2, ""},
        TwoRankCase{"gpt-tiny", 5, ""}, TwoRankCase{"resnet-tiny", 1, ""},
        TwoRankCase{"resnet-tiny", 2, ""}, TwoRankCase{"resnet-tiny", 5, ""},
        TwoRankCase{"gpt-tiny", 3, "--ddp.gradient_as_bucket_view true"},
        TwoRankCase{"gpt-tiny", 1, kCheckpointed},
        TwoRankCase{"gpt-tiny", 2, kCheckpointed},
        TwoRankCase{"gpt-tiny", 5, kCheckpointed},
        TwoRankCase{"resnet-tiny", 1, kCheckpointed},
        TwoRankCase{"resnet-tiny", 2, kCheckpointed},
        TwoRankCase{"resnet-tiny", 5, kCheckpointed},
        TwoRankCase{"mlp-tiny", 2, kAutocast},
        TwoRankCase{"gpt-tiny", 1, kAutocast},
        TwoRankCase{"gpt-tiny", 2, kAutocast},
        TwoRankCase{"gpt-tiny", 5, kAutocast},
        TwoRankCase{"resnet-tiny", 2, kAutocast},
        TwoRankCase{"mlp-tiny", 2, kBfloat16},
        TwoRankCase{"gpt-tiny", 2, kBfloat16},
        TwoRankCase{"resnet-tiny", 2, kBfloat16},
        TwoRankCase{"mlp-tiny", 2,
                    "--train.dtype bfloat16 --train.optimizer sgd "
                    "--train.momentum 0.9"},
        TwoRankCase{"mlp-tiny", 2,
                    "--train.dtype bfloat16 --train.optimizer adamw"},
        TwoRankCase{"gpt-tiny", 2, kCheckpointedAutocast},
        TwoRankCase{"llama-tiny", 1, ""},
        TwoRankCase{"llama-odd", 5, kCheckpointed},
        TwoRankCase{"llama-tiny", 2, kAutocast},
        TwoRankCase{"llama-odd", 2, kBfloat16},
        TwoRankCase{"llama-odd", 2, "--ddp.zero_stage 1"},
        TwoRankCase{"resnet-tiny", 2, kCheckpointedAutocast},
        // Accumulation with each lever: the activations are one
        // micro-batch's, the model state the lever's.
        TwoRankCase{"gpt-tiny", 2,
                    "--grad-accum 2 --train.activation_checkpointing blocks"},
        TwoRankCase{"gpt-tiny", 2,
                    "--grad-accum 3 --train.dtype bf16-autocast"},
        TwoRankCase{"llama-odd", 2, "--grad-accum 2 --ddp.zero_stage 1"},
        // Note [Accumulated bucket views]: each gradient twice in backward.
        TwoRankCase{"gpt-tiny", 2,
                    "--grad-accum 2 --train.zero_grad_set_to_none true "
                    "--ddp.gradient_as_bucket_view true --train.optimizer sgd"},
        TwoRankCase{
            "llama-tiny", 2,
            "--grad-accum 2 --lora-rank 4 --lora-targets q_proj,v_proj"}),
    [](const ::testing::TestParamInfo<TwoRankCase>& info) {
      // "gpt-tiny", 2, "--train.dtype bfloat16" -> gpt_tiny_b2_dtype_bfloat16
      std::string name =
          info.param.preset + "_b" + std::to_string(info.param.micro_batch);
      std::string extra = info.param.extra;
      for (const std::string& drop :
           {std::string("--train."), std::string("--ddp."),
            std::string("activation_")}) {
        for (size_t at; (at = extra.find(drop)) != std::string::npos;) {
          extra.erase(at, drop.size());
        }
      }
      if (!extra.empty()) name += "_" + extra;
      for (char& ch : name) {
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      }
      return name;
    });

// Every MLP parameter feeds a Linear, so under bf16-autocast each forward
// copies each of them once, at 2 bytes per element: 2P per step, all of
// it weight_casts, none left behind; and the bfloat16 run's model state is
// half the float32 run's, category by category.
TEST(MixedPrecision, EachForwardCopiesEveryMlpWeightAtTwoBytesPerElement) {
  const TempDir temp_dir;
  const fs::path autocast = temp_dir.path() / "autocast";
  const fs::path bf16 = temp_dir.path() / "bf16";
  const fs::path fp32 = temp_dir.path() / "fp32";
  const std::string config =
      "profile --config " MEMPROF_SOURCE_DIR "/configs/mlp-tiny.ini --steps 4 ";
  for (const auto& [dir, dtype] :
       {std::pair{autocast, "bf16-autocast"}, std::pair{bf16, "bfloat16"},
        std::pair{fp32, "float32"}}) {
    const CommandResult r = RunMemprof(config + "--train.dtype " + dtype +
                                       " --out " + dir.string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  const RankReport a = ReadRankReport(RankReportPath(autocast, 0));
  const CategoryFigures& casts = a.Of(Category::kWeightCasts);
  EXPECT_EQ(casts.allocated_bytes, 4 * 2 * a.parameters);
  EXPECT_EQ(casts.freed_bytes, casts.allocated_bytes);
  EXPECT_EQ(casts.end_bytes, 0);
  EXPECT_GT(casts.peak_bytes, 0);
  const RankReport b = ReadRankReport(RankReportPath(bf16, 0));
  const RankReport f = ReadRankReport(RankReportPath(fp32, 0));
  EXPECT_EQ(b.Of(Category::kWeightCasts).allocated_bytes, 0);
  for (Category c : {Category::kWeights, Category::kGradients,
                     Category::kOptimizerState, Category::kDdpBuckets}) {
    EXPECT_EQ(2 * b.Of(c).peak_bytes, f.Of(c).peak_bytes) << CategoryName(c);
    EXPECT_EQ(a.Of(c).peak_bytes, f.Of(c).peak_bytes) << CategoryName(c);
  }
}

}  // namespace
}  // namespace memprof
