// Frozen parameters measured at one rank (the two-rank runs are in
// frozen_multirank_test.cc): what must hold is in frozen_checks.h.
#include <gtest/gtest.h>

#include "tests/predict/frozen_checks.h"
#include "tests/run_command.h"
#include "tests/temp_dir.h"

namespace memprof {
namespace {

class FrozenRun : public ::testing::TestWithParam<FrozenRunCase> {};

TEST_P(FrozenRun, TrainedParametersAloneHoldGradientsStateAndBuckets) {
  const FrozenRunCase& c = GetParam();
  const TempDir dir;
  const CommandResult r =
      RunMemprof("profile --config " MEMPROF_SOURCE_DIR "/configs/" + c.preset +
                 ".ini --steps 3 --quiet --freeze " + c.freeze + " --out " +
                 dir.path().string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ExpectFrozenRunHolds(ReadRankReport(RankReportPath(dir.path(), 0)), c);
  // The console states the split.
  EXPECT_NE(r.output.find("frozen: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(" trained (20 bytes each"), std::string::npos)
      << r.output;
}

INSTANTIATE_TEST_SUITE_P(LastBlockTrained, FrozenRun,
                         ::testing::ValuesIn(LastBlockTrained()));

}  // namespace
}  // namespace memprof
