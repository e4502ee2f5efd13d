// LoRA adapters on two ranks through the launcher: every rank meets
// lora_checks.h, and the ranks' Adam moments are bit-identical.
#include <gtest/gtest.h>

#include "tests/predict/lora_checks.h"
#include "tests/run_command.h"
#include "tests/temp_dir.h"

namespace memprof {
namespace {

class LoraTwoRanks : public ::testing::TestWithParam<LoraRunCase> {};

TEST_P(LoraTwoRanks, EveryRankHoldsTheAdaptersStateAlone) {
  const LoraRunCase& c = GetParam();
  const TempDir dir;
  const CommandResult r =
      RunMemprof("profile --config " MEMPROF_SOURCE_DIR "/configs/" + c.preset +
                 ".ini --world-size 2 --steps 3 --quiet" + LoraFlags(c) +
                 " --out " + dir.path().string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (int rank = 0; rank < 2; ++rank) {
    const RankReport report = ReadRankReport(RankReportPath(dir.path(), rank));
    ExpectLoraRunHolds(report, c);
    for (const RedundancyFigures& entry : report.redundancy) {
      EXPECT_TRUE(entry.identical_across_ranks) << CategoryName(entry.category);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(RankFourOnTwoTargets, LoraTwoRanks,
                         ::testing::ValuesIn(TwoTargets()));

}  // namespace
}  // namespace memprof
