// The headline of a run (Note [Headline]): the busiest rank's peak, the
// category with the most bytes at it, its phase, and the lever of those that
// act on that category with the lowest predicted peak.
#include "profiler/report/headline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "profiler/base/human_bytes.h"
#include "profiler/predict/fit.h"
#include "tests/report/fixture.h"

namespace memprof {
namespace {

// The fixture's ranks with `bytes` more of `c` at their peak.
std::vector<RankReport> WithMoreAtThePeak(Category c, int64_t bytes) {
  std::vector<RankReport> ranks = FixtureRanks();
  for (RankReport& rank : ranks) {
    rank.peak.breakdown[Index(c)] += bytes;
    rank.peak.total_bytes += bytes;
  }
  return ranks;
}

TEST(Headline, FixtureRunNamesZeroOneForItsOptimizerState) {
  const std::vector<RankReport> ranks = FixtureRanks();
  ASSERT_EQ(ranks.size(), 2u);
  const std::optional<Headline> h = HeadlineOf(ViewOf(ranks));
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(h->peak_bytes, ranks[0].peak.total_bytes);
  EXPECT_EQ(h->phase, Phase::kOptimizer);
  EXPECT_EQ(h->dominant, Category::kOptimizerState);
  EXPECT_EQ(h->dominant_bytes,
            ranks[0].peak.breakdown[Index(Category::kOptimizerState)]);
  RunConfig config = ranks[0].context.config;
  const int64_t predicted = PredictedPeakAt(config, ranks[0].micro_batch);
  config.ddp.zero_stage = 1;
  const int64_t zero1 = PredictedPeakAt(config, ranks[0].micro_batch);
  ASSERT_LT(zero1, predicted);
  EXPECT_EQ(h->predicted_peak_bytes, predicted);
  EXPECT_EQ(h->lever_peak_bytes, zero1);
  EXPECT_EQ(HeadlineSentence(*h),
            "Peak " + HumanBytes(ranks[0].peak.total_bytes) +
                " on ranks 0\u20131, in the optimizer phase of step 3; the "
                "largest part is optimizer state, " +
                HumanBytes(h->dominant_bytes) +
                " (35%). The lever that cuts it most: ZeRO-1 at 2 ranks "
                "(--ddp.zero_stage 1), predicted peak " +
                HumanBytes(zero1) + " against " + HumanBytes(predicted) +
                " predicted for this run.");
}

TEST(Headline, ActivationsTakeTheLowerOfCheckpointingAndHalfTheMicroBatch) {
  std::vector<RankReport> ranks =
      WithMoreAtThePeak(Category::kActivations, int64_t{1} << 30);
  for (RankReport& rank : ranks) rank.context.config.model = "gpt";
  const std::optional<Headline> h = HeadlineOf(ViewOf(ranks));
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->dominant, Category::kActivations);
  RunConfig checkpointed = ranks[0].context.config;
  checkpointed.train.activation_checkpointing = "blocks";
  const int64_t by_checkpointing = PredictedPeakAt(checkpointed, 8);
  RunConfig doubled = ranks[0].context.config;
  doubled.ddp.world_size = 4;
  const int64_t by_half = PredictedPeakAt(doubled, 4);
  EXPECT_EQ(h->lever_peak_bytes, std::min(by_checkpointing, by_half));
  EXPECT_EQ(h->lever, by_checkpointing <= by_half
                          ? "activation checkpointing"
                          : "micro-batch 4 per rank on 4 ranks, the same "
                            "global batch");
}

TEST(Headline, AnMlpsActivationsHaveHalfTheMicroBatchOnly) {
  const std::vector<RankReport> ranks =
      WithMoreAtThePeak(Category::kActivations, int64_t{1} << 30);
  const std::optional<Headline> h = HeadlineOf(ViewOf(ranks));
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->lever_flags, "--micro-batch 4 --world-size 4");
  RunConfig doubled = ranks[0].context.config;
  doubled.ddp.world_size = 4;
  EXPECT_EQ(h->lever_peak_bytes, PredictedPeakAt(doubled, 4));
}

TEST(Headline, ModelStateOnOneRankHasNoLever) {
  std::vector<RankReport> ranks = FixtureRanks();
  ranks.resize(1);
  ranks[0].context.config.ddp.world_size = 1;
  const std::optional<Headline> h = HeadlineOf(ViewOf(ranks));
  ASSERT_TRUE(h.has_value());
  EXPECT_TRUE(h->lever.empty());
  const std::string sentence = HeadlineSentence(*h);
  EXPECT_NE(sentence.find(" on rank 0, "), std::string::npos) << sentence;
  EXPECT_NE(sentence.find("No lever memprof runs cuts optimizer state in "
                          "this configuration (ZeRO-1 shards the optimizer "
                          "state over several ranks)."),
            std::string::npos)
      << sentence;
}

TEST(Headline, BucketsTakeGradientsAsBucketViews) {
  const std::vector<RankReport> ranks =
      WithMoreAtThePeak(Category::kDdpBuckets, int64_t{1} << 30);
  const std::optional<Headline> h = HeadlineOf(ViewOf(ranks));
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->dominant, Category::kDdpBuckets);
  RunConfig view = ranks[0].context.config;
  view.ddp.gradient_as_bucket_view = true;
  EXPECT_EQ(h->lever_flags, "--ddp.gradient_as_bucket_view true");
  EXPECT_EQ(h->lever_peak_bytes, PredictedPeakAt(view, 8));
}

TEST(Headline, TheBusiestRankAloneIsNamed) {
  std::vector<RankReport> ranks = FixtureRanks();
  ranks[1].peak.total_bytes += 1;
  const std::optional<Headline> h = HeadlineOf(ViewOf(ranks));
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->ranks, std::vector<int>{1});
  EXPECT_EQ(h->peak_bytes, ranks[1].peak.total_bytes);
}

TEST(Headline, NoneWithoutASteadyStateStep) {
  std::vector<RankReport> ranks = FixtureRanks();
  for (RankReport& rank : ranks) rank.steady_from = 99;
  EXPECT_FALSE(HeadlineOf(ViewOf(ranks)).has_value());
}

TEST(Headline, RanksLabelJoinsARunWithADash) {
  EXPECT_EQ(RanksLabel({3}), "rank 3");
  EXPECT_EQ(RanksLabel({0, 1, 2, 3, 4, 5, 6, 7}), "ranks 0\u20137");
  EXPECT_EQ(RanksLabel({0, 2, 5}), "ranks 0, 2, 5");
}

}  // namespace
}  // namespace memprof
