// Note [Progress line]: when lines are due, on a simulated clock (no
// wall-clock timing), and what a line says.
#include "profiler/cli/progress_line.h"

#include <vector>

#include <gtest/gtest.h>

namespace memprof {
namespace {

// The times at which lines are printed when the tracker is sampled every
// kProgressPollSeconds for `seconds`, the run at step 1 + floor(t /
// step_seconds).
std::vector<double> LineTimes(double step_seconds, double seconds) {
  ProgressPacer pacer;
  std::vector<double> times;
  for (int poll = 1; poll * kProgressPollSeconds <= seconds; ++poll) {
    const double now = poll * kProgressPollSeconds;
    if (pacer.Due(now, 1 + static_cast<int64_t>(now / step_seconds))) {
      times.push_back(now);
    }
  }
  return times;
}

double LongestGap(const std::vector<double>& times) {
  double gap = 0;
  for (size_t i = 1; i < times.size(); ++i) {
    gap = std::max(gap, times[i] - times[i - 1]);
  }
  return gap;
}

TEST(ProgressPacer, FirstSampleIsDueThenAtMostOneLineAnInterval) {
  ProgressPacer pacer;
  EXPECT_TRUE(pacer.Due(0.25, 1));
  EXPECT_FALSE(pacer.Due(0.5, 40));  // the step moved, too soon
  EXPECT_FALSE(pacer.Due(1.0, 90));
  EXPECT_TRUE(pacer.Due(1.25, 120));  // a second since the last line
  EXPECT_FALSE(pacer.Due(2.5, 120));  // the step has not moved
  EXPECT_FALSE(pacer.Due(5.0, 120));
  EXPECT_TRUE(pacer.Due(5.25, 120));  // four seconds of silence
}

// Quick steps (1,500 in 5 s, as gpt-tiny's): about a line a second, not one
// per step.
TEST(ProgressPacer, QuickStepsGiveALineASecond) {
  const std::vector<double> times = LineTimes(5.0 / 1500, 60);
  EXPECT_GE(times.size(), 45u);
  EXPECT_LE(times.size(), 61u);
  EXPECT_LE(LongestGap(times),
            kProgressMinIntervalSeconds + kProgressPollSeconds);
}

// Slow steps (3 s each): a line per step.
TEST(ProgressPacer, SlowStepsGiveALinePerStep) {
  const std::vector<double> times = LineTimes(3, 59);
  EXPECT_EQ(times.size(), 20u);
}

// A step longer than the run shown (a big model on a CPU): a line at least
// every 5 s all the same.
TEST(ProgressPacer, ALongStepStillGivesALineEveryFiveSeconds) {
  const std::vector<double> times = LineTimes(1e9, 600);
  ASSERT_GE(times.size(), 2u);
  EXPECT_LE(LongestGap(times), 5.0);
  EXPECT_LE(LongestGap(times),
            kProgressMaxSilenceSeconds + kProgressPollSeconds);
}

TEST(ProgressLine, SaysStepElapsedLiveAndPeakInBinaryUnits) {
  EXPECT_EQ(FormatProgressLine(12, 1500, 3.7, 1258291, 2453667),
            "memprof: step 12 of 1500, 0:03 elapsed, live 1.20 MiB, peak so "
            "far at least 2.34 MiB");
  EXPECT_EQ(FormatProgressLine(2, 3, 0, -1, -1),
            "memprof: step 2 of 3, 0:00 elapsed");
  EXPECT_EQ(FormatTrainedLine(1500, 1500, 5.2, 2527068),
            "memprof: trained 1500 of 1500 steps in 0:05, peak 2.41 MiB; "
            "writing the reports");
  EXPECT_EQ(FormatTrainedLine(7, 1500, 5.2, -1),
            "memprof: trained 7 of 1500 steps in 0:05; writing the reports");
  EXPECT_EQ(FormatElapsed(59.9), "0:59");
  EXPECT_EQ(FormatElapsed(760), "12:40");
  EXPECT_EQ(FormatElapsed(3723), "1:02:03");
}

}  // namespace
}  // namespace memprof
