// Two ranks through the launcher: every rank meets its prediction, for each
// CI-sized model at micro-batches 1, 2 and 5, and with the gradients as
// bucket views and with checkpointed blocks.
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
    ExpectPredictionHolds(report, c.preset + " at micro-batch " +
                                      std::to_string(c.micro_batch) + " " +
                                      c.extra);
  }
  // The printed table carries the error column.
  EXPECT_NE(r.output.find("predicted"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("error"), std::string::npos) << r.output;
}

INSTANTIATE_TEST_SUITE_P(
    TinyConfigs, TwoRankPrediction,
    ::testing::Values(
        TwoRankCase{"mlp-tiny", 1, ""}, TwoRankCase{"mlp-tiny", 2, ""},
        TwoRankCase{"mlp-tiny", 5, ""}, TwoRankCase{"gpt-tiny", 1, ""},
        TwoRankCase{"gpt-tiny", 2, ""}, TwoRankCase{"gpt-tiny", 5, ""},
        TwoRankCase{"resnet-tiny", 1, ""}, TwoRankCase{"resnet-tiny", 2, ""},
        TwoRankCase{"resnet-tiny", 5, ""},
        TwoRankCase{"gpt-tiny", 3, "--ddp.gradient_as_bucket_view true"},
        TwoRankCase{"gpt-tiny", 1, kCheckpointed},
        TwoRankCase{"gpt-tiny", 2, kCheckpointed},
        TwoRankCase{"gpt-tiny", 5, kCheckpointed},
        TwoRankCase{"resnet-tiny", 1, kCheckpointed},
        TwoRankCase{"resnet-tiny", 2, kCheckpointed},
        TwoRankCase{"resnet-tiny", 5, kCheckpointed}),
    [](const ::testing::TestParamInfo<TwoRankCase>& info) {
      std::string name = info.param.preset + "_b" +
                         std::to_string(info.param.micro_batch) +
                         (info.param.extra.empty()            ? ""
                          : info.param.extra == kCheckpointed ? "_checkpointed"
                                                              : "_bucket_view");
      for (char& ch : name) {
        if (ch == '-') ch = '_';
      }
      return name;
    });

}  // namespace
}  // namespace memprof
