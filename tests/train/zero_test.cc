// ZeRO-1 against plain DDP, end to end through the launcher: the same
// config at stage 0 and 1, at 1, 2 and 4 ranks. Weights and gradients are
// the same per rank in both stages; each rank's optimizer state is its
// partition, predicted to the byte; the partitions cover every parameter
// once; the parameters after the last step are the same on every rank
// (bit for bit), and every step's loss is plain DDP's (the same Adam
// arithmetic on each parameter, on its owner).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "profiler/predict/prediction.h"
#include "profiler/report/rank_report.h"
#include "tests/run_command.h"
#include "tests/temp_dir.h"

namespace memprof {
namespace {

namespace fs = std::filesystem;

struct ZeroCase {
  std::string config;
  int world_size;
  std::string extra;  // the micro-batch, kept small for CI
};

void PrintTo(const ZeroCase& c, std::ostream* os) {
  *os << c.config << " at " << c.world_size << " ranks " << c.extra;
}

class ZeroAgainstPlain : public ::testing::TestWithParam<ZeroCase> {};

std::vector<RankReport> RunStage(const ZeroCase& c, int stage,
                                 const fs::path& out) {
  const CommandResult r =
      RunMemprof("profile --config " MEMPROF_SOURCE_DIR "/configs/" + c.config +
                 ".ini --world-size " + std::to_string(c.world_size) +
                 " --steps 4 " + c.extra + " --ddp.zero_stage " +
                 std::to_string(stage) + " --out " + out.string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::vector<RankReport> ranks;
  for (int rank = 0; rank < c.world_size; ++rank) {
    ranks.push_back(ReadRankReport(RankReportPath(out, rank)));
  }
  if (stage == 1 && c.world_size > 1) {
    EXPECT_NE(r.output.find("ZeRO-1: optimizer state"), std::string::npos)
        << r.output;
  }
  return ranks;
}

int64_t PeakOf(const RankReport& rank, Category c) {
  return rank.Of(c).peak_bytes;
}

TEST_P(ZeroAgainstPlain, ShardsTheOptimizerStateAndTrainsTheSame) {
  const ZeroCase& c = GetParam();
  const TempDir temp_dir;
  const std::vector<RankReport> plain =
      RunStage(c, 0, temp_dir.path() / "plain");
  const std::vector<RankReport> zero = RunStage(c, 1, temp_dir.path() / "zero");
  ASSERT_EQ(zero.size(), static_cast<size_t>(c.world_size));
  const int64_t replicated = PeakOf(plain[0], Category::kOptimizerState);
  ASSERT_GT(replicated, 0);
  int64_t sharded_sum = 0;
  const ZeroFigures& z0 = *zero[0].zero;
  int64_t partition_sum = 0;
  for (int64_t p : z0.partition_parameters) partition_sum += p;
  EXPECT_EQ(partition_sum, zero[0].parameters);
  for (int r = 0; r < c.world_size; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    ASSERT_FALSE(plain[r].zero.has_value());
    ASSERT_TRUE(zero[r].zero.has_value());
    const ZeroFigures& z = *zero[r].zero;
    EXPECT_TRUE(z.covered_once);
    EXPECT_EQ(z.partition_parameters, z0.partition_parameters);
    EXPECT_EQ(z.replicated_optimizer_state_bytes, replicated);
    for (Category same : {Category::kWeights, Category::kGradients,
                          Category::kDdpBuckets, Category::kInputs}) {
      EXPECT_EQ(PeakOf(zero[r], same), PeakOf(plain[r], same))
          << CategoryName(same);
    }
    // Adam: exp_avg and exp_avg_sq, 4 bytes each, for the rank's partition.
    EXPECT_EQ(PeakOf(zero[r], Category::kOptimizerState),
              8 * z.partition_parameters[r]);
    // Every category predicted as at stage 0 (the peak is not checked: a
    // rank with a small partition peaks in backward, where the prediction
    // misses the largest gradient's temporary; docs/data-parallelism.md
    // "ZeRO-1").
    for (Category exact :
         {Category::kWeights, Category::kGradients, Category::kOptimizerState,
          Category::kDdpBuckets, Category::kInputs, Category::kUnattributed}) {
      EXPECT_EQ(PeakOf(zero[r], exact), zero[r].Of(exact).predicted_bytes)
          << CategoryName(exact);
    }
    const CategoryFigures& act = zero[r].Of(Category::kActivations);
    EXPECT_LE(std::llabs(act.peak_bytes - act.predicted_bytes),
              act.predicted_bytes * 3 / 100);
    sharded_sum += PeakOf(zero[r], Category::kOptimizerState);
    // The parameters after the last step: the same on every rank, bit for
    // bit (the exchange). Against plain DDP the two runs are two processes
    // whose float32 results are not always bit-identical on a loaded
    // machine: gpt-tiny at 1 rank, two test processes at once on 2 cores,
    // ended with other weight hashes than the plain run in 4 of 104 runs,
    // every step's loss agreeing. So there the test holds the losses to
    // 1e-6 relative, step by step: the same training.
    const RedundancyFigures& w_zero = zero[r].redundancy.at(0);
    ASSERT_EQ(w_zero.category, Category::kWeights);
    EXPECT_TRUE(w_zero.identical_across_ranks);
    for (size_t s = 0; s < plain[r].steps.size(); ++s) {
      EXPECT_NEAR(zero[r].steps[s].loss, plain[r].steps[s].loss,
                  1e-6 * std::abs(plain[r].steps[s].loss))
          << "step " << s;
      EXPECT_EQ(plain[r].steps[s].exchange_seconds, 0);
      if (c.world_size > 1) EXPECT_GT(zero[r].steps[s].exchange_seconds, 0);
    }
    // The optimizer state is no longer held in duplicate.
    const RedundancyFigures& o_zero = zero[r].redundancy.at(1);
    ASSERT_EQ(o_zero.category, Category::kOptimizerState);
    EXPECT_EQ(o_zero.redundant_bytes, 0);
    if (c.world_size > 1) EXPECT_FALSE(o_zero.identical_across_ranks);
  }
  // Together the shards are one replica's state.
  EXPECT_EQ(sharded_sum, replicated);
}

INSTANTIATE_TEST_SUITE_P(
    CiConfigs, ZeroAgainstPlain,
    ::testing::Values(ZeroCase{"mlp-tiny", 1, ""}, ZeroCase{"mlp-tiny", 2, ""},
                      ZeroCase{"mlp-tiny", 4, ""},
                      ZeroCase{"gpt-tiny", 1, "--micro-batch 2"},
                      ZeroCase{"gpt-tiny", 2, "--micro-batch 2"},
                      ZeroCase{"gpt-tiny", 4, "--micro-batch 2"},
                      ZeroCase{"default", 1, "--micro-batch 4"},
                      ZeroCase{"default", 2, "--micro-batch 4"},
                      ZeroCase{"default", 4, "--micro-batch 4"}));

// The prediction's partition is the trainer's: every rank's optimizer state
// from the size table alone, summing to one replica's.
TEST(ZeroPrediction, RanksSumToOneReplica) {
  RunConfig config;
  config.ddp.world_size = 4;
  config.ddp.zero_stage = 1;
  config.mlp.hidden = 64;
  RunConfig plain = config;
  plain.ddp.zero_stage = 0;
  const int64_t replicated =
      Predict(plain).bytes[Index(Category::kOptimizerState)];
  int64_t sum = 0;
  for (int r = 0; r < 4; ++r) {
    const Prediction p = Predict(config, r);
    ASSERT_EQ(p.owned_parameters.size(), 4u);
    EXPECT_EQ(p.bytes[Index(Category::kOptimizerState)],
              8 * p.owned_parameters[r]);
    sum += p.bytes[Index(Category::kOptimizerState)];
    // Weights, gradients and buckets do not depend on the stage.
    for (Category c :
         {Category::kWeights, Category::kGradients, Category::kDdpBuckets}) {
      EXPECT_EQ(p.bytes[Index(c)], Predict(plain).bytes[Index(c)]);
    }
  }
  EXPECT_EQ(sum, replicated);
  EXPECT_EQ(Predict(config, 0).zero.stage1_bytes,
            Predict(plain).zero.stage1_bytes);
  // fit and the limit's advice go by the busiest rank.
  int64_t most = 0, least = INT64_MAX;
  for (int r = 0; r < 4; ++r) {
    most = std::max(most, Predict(config, r).Peak().Total());
    least = std::min(least, Predict(config, r).Peak().Total());
  }
  EXPECT_LT(least, most);
  EXPECT_EQ(PredictBusiestRank(config).Peak().Total(), most);

  // Predicting one rank per distinct share finds the rank that predicting
  // every rank does: the highest peak, ties to the lowest rank.
  for (int n : {2, 3, 5, 7, 16, 40}) {
    for (const char* model : {"mlp", "gpt"}) {
      RunConfig c = config;
      c.model = model;
      c.gpt = {2, 64, 4, 32, 256, 0};
      c.ddp.world_size = n;
      int busiest = 0;
      int64_t peak = Predict(c, 0).Peak().Total();
      for (int r = 1; r < n; ++r) {
        if (Predict(c, r).Peak().Total() > peak) {
          peak = Predict(c, r).Peak().Total();
          busiest = r;
        }
      }
      const Prediction p = PredictBusiestRank(c);
      EXPECT_EQ(p.rank, busiest) << model << " at " << n << " ranks";
      EXPECT_EQ(p.Peak().Total(), peak) << model << " at " << n << " ranks";
    }
  }
}

// A rank that dies inside the parameter exchange ends the job: exit 3,
// the rank named, no hang (DieHereIfAsked in profiler/train/ddp_engine.cc).
TEST(ZeroFailure, ARankDyingInTheExchangeIsNamed) {
  const TempDir temp_dir;
  const auto start = std::chrono::steady_clock::now();
  const CommandResult r = RunCommand(
      "MEMPROF_TEST_KILL_IN_EXCHANGE=1 " MEMPROF_BINARY
      " profile --config " MEMPROF_SOURCE_DIR
      "/configs/mlp-tiny.ini --world-size 2 --ddp.zero_stage 1 --out " +
      (temp_dir.path() / "d").string());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("rank 1 (pid "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("was killed by signal 9"), std::string::npos)
      << r.output;
  EXPECT_LT(seconds, 60.0) << r.output;
}

}  // namespace
}  // namespace memprof
