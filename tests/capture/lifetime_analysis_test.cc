#include "profiler/capture/lifetime_analysis.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "profiler/base/errors.h"
#include "tests/capture/lifetime_block.h"

namespace memprof {
namespace {

constexpr int kW = static_cast<int>(Category::kWeights);
constexpr int kA = static_cast<int>(Category::kActivations);
constexpr int kT = static_cast<int>(Category::kTemporaries);

// A hand-made session: weights at set-up, then two steps.
//   seq 0      weights 100 (live)
//   step 1: forward  seq 1 act 50 (freed 4), seq 2 tmp 30 (freed 3)
//           backward seq 5 tmp 10 (freed 6)
//   step 2: forward  seq 7 act 60 (freed 9), seq 8 tmp 5 (freed 10)
Capture TwoSteps(const std::string& path = "", bool ended = true) {
  return WriteCapture({Block(0, kLive, 100, Category::kWeights),
                       Block(1, 4, 50, Category::kActivations),
                       Block(2, 3, 30, Category::kTemporaries),
                       Block(5, 6, 10, Category::kTemporaries),
                       Block(7, 9, 60, Category::kActivations),
                       Block(8, 10, 5, Category::kTemporaries)},
                      {{0, Phase::kModelInit, 0},
                       {1, Phase::kForward, 1},
                       {4, Phase::kBackward, 1},
                       {7, Phase::kForward, 2},
                       {9, Phase::kBackward, 2},
                       {11, Phase::kIdle, 0}},
                      0, 11, path, ended);
}

TEST(Analyze, StepPeaksAndBreakdownsFollowLifetimes) {
  const Analysis a = Analyze(TwoSteps());
  ASSERT_EQ(a.steps.size(), 2u);
  EXPECT_EQ(a.steps[0].peak.total_bytes, 180);  // seq 2: 100 + 50 + 30
  EXPECT_EQ(a.steps[0].peak.seq, 2);
  EXPECT_EQ(a.steps[0].peak.phase, Phase::kForward);
  EXPECT_EQ(a.steps[0].peak.bytes[kA], 50);
  EXPECT_EQ(a.steps[1].peak.total_bytes, 165);  // seq 8: 100 + 60 + 5
  EXPECT_EQ(a.run_peak.total_bytes, 180);
  EXPECT_EQ(a.run_peak.step, 1);
}

TEST(Analyze, SteadyStateStartsAtStepTwo) {
  const Analysis a = Analyze(TwoSteps());
  EXPECT_EQ(a.steady_first_step, 2);
  EXPECT_EQ(a.steady_peak.total_bytes, 165);
  EXPECT_EQ(a.steady_peak.step, 2);
  EXPECT_EQ(Sum(a.steady_peak.bytes), a.steady_peak.total_bytes);
  // Weights were allocated before the steady state and still count.
  EXPECT_EQ(a.steady_max[kW], 100);
  EXPECT_EQ(a.steady_max[kA], 60);
  EXPECT_EQ(a.steady_max[kT], 5);
}

TEST(Analyze, StatsUseFinalCategories) {
  const Analysis a = Analyze(TwoSteps());
  EXPECT_EQ(a.stats[kW].current, 100);
  EXPECT_EQ(a.stats[kA].allocated, 110);
  EXPECT_EQ(a.stats[kA].freed, 110);
  EXPECT_EQ(a.stats[kA].peak, 60);
  EXPECT_EQ(a.stats[kT].peak, 30);
  EXPECT_EQ(a.total.current, 100);
  EXPECT_EQ(a.total.peak, 180);
}

TEST(Analyze, SegmentsTileTheSessionAndCarryBoundaryBytes) {
  const Analysis a = Analyze(TwoSteps());
  ASSERT_EQ(a.segments.size(), 6u);
  for (size_t i = 0; i + 1 < a.segments.size(); ++i) {
    EXPECT_EQ(a.segments[i].end_seq, a.segments[i + 1].begin_seq);
    EXPECT_EQ(a.segments[i].end_bytes, a.segments[i + 1].begin_bytes);
  }
  // Backward of step 1 starts with the activation still live.
  EXPECT_EQ(a.segments[2].begin_bytes[kA], 50);  // freed by its first event
  EXPECT_EQ(a.segments[1].peak.total_bytes, 180);
  EXPECT_EQ(a.segments[2].peak.total_bytes, 110);
  EXPECT_EQ(a.steps[0].end_bytes[kW], 100);
  EXPECT_EQ(Sum(a.steps[1].end_bytes), 100);
}

TEST(Analyze, SingleStepIsItsOwnSteadyState) {
  const Analysis a = Analyze(
      WriteCapture({Block(10, 11, 8, Category::kTemporaries)},
                   {{10, Phase::kIdle, 0}, {10, Phase::kForward, 1}}, 10, 12));
  EXPECT_EQ(a.steady_first_step, 1);
  EXPECT_EQ(a.steady_peak.total_bytes, 8);
  EXPECT_EQ(a.steady_peak.seq, 10);
}

TEST(Analyze, SeriesReplaysTheSteadyPeaksStepEventByEvent) {
  const Analysis a = Analyze(TwoSteps());
  ASSERT_EQ(a.series_step, 2);
  // The value the step opened with (after seq 6), then seqs 7..10.
  ASSERT_EQ(a.series.size(), 5u);
  const int64_t seqs[] = {6, 7, 8, 9, 10};
  const int64_t weights[] = {100, 100, 100, 100, 100};
  const int64_t activations[] = {0, 60, 60, 0, 0};
  const int64_t temporaries[] = {0, 0, 5, 5, 0};
  for (size_t i = 0; i < a.series.size(); ++i) {
    EXPECT_EQ(a.series[i].seq, seqs[i]) << i;
    EXPECT_EQ(a.series[i].bytes[kW], weights[i]) << i;
    EXPECT_EQ(a.series[i].bytes[kA], activations[i]) << i;
    EXPECT_EQ(a.series[i].bytes[kT], temporaries[i]) << i;
  }
  EXPECT_EQ(Sum(a.series[2].bytes), a.steady_peak.total_bytes);
}

TEST(Analyze, LongSeriesIsThinnedKeepingItsPeakAndEnds) {
  // One step of 20,000 alloc/free pairs whose sizes rise and fall, so the
  // step's peak lies inside the sequence, not at either end.
  constexpr int64_t kPairs = 20000;
  std::vector<Lifetime> blocks = {Block(0, kLive, 1000, Category::kWeights)};
  for (int64_t i = 0; i < kPairs; ++i) {
    const int64_t bytes = 1 + (i * 7919) % 10007;  // peak at some inner i
    blocks.push_back(
        Block(1 + 2 * i, 2 + 2 * i, bytes, Category::kTemporaries));
  }
  const Capture capture =
      WriteCapture(blocks, {{0, Phase::kIdle, 0}, {1, Phase::kForward, 1}}, 0,
                   2 * kPairs + 1);
  const Analysis a = Analyze(capture, AnalysisOptions{/*one_time=*/0});
  ASSERT_EQ(a.series_step, 1);
  ASSERT_LE(a.series.size(), kMaxSeriesPoints);
  ASSERT_GE(a.series.size(), kMaxSeriesPoints / 2);
  EXPECT_EQ(a.series.front().seq, 0);
  EXPECT_EQ(a.series.back().seq, 2 * kPairs);
  int64_t largest = 0;
  for (size_t i = 0; i < a.series.size(); ++i) {
    largest = std::max(largest, Sum(a.series[i].bytes));
    if (i > 0) EXPECT_LT(a.series[i - 1].seq, a.series[i].seq);
  }
  EXPECT_EQ(largest, a.steady_peak.total_bytes);
  EXPECT_EQ(a.steady_peak.total_bytes, 1000 + 10007);
}

}  // namespace
}  // namespace memprof

namespace memprof {
namespace {

// Six steps whose temporaries grow, peak in step 4, then shrink.
Capture SixSteps() {
  std::vector<Lifetime> blocks = {Block(0, kLive, 64, Category::kWeights)};
  std::vector<PhaseMark> marks = {{0, Phase::kIdle, 0}};
  const int64_t sizes[] = {100, 200, 300, 900, 500, 400};
  for (int32_t step = 1; step <= 6; ++step) {
    const int64_t seq = 1 + 2 * (step - 1);
    marks.push_back({seq, Phase::kForward, step});
    blocks.push_back(
        Block(seq, seq + 1, sizes[step - 1], Category::kTemporaries));
  }
  marks.push_back({13, Phase::kIdle, 0});
  return WriteCapture(blocks, marks, 0, 13);
}

// Note [Kept steps]: every step's peak, the detail of steps 1, the
// steady-state peak's (4) and the last two only.
TEST(Analyze, KeepsTheDetailOfTheKeptStepsAndEveryStepsPeak) {
  const Analysis a = Analyze(SixSteps());
  ASSERT_EQ(a.step_peaks.size(), 6u);
  EXPECT_EQ(a.step_peaks[1].total_bytes, 64 + 200);
  EXPECT_EQ(a.step_peaks[3].total_bytes, 64 + 900);
  std::vector<int32_t> kept;
  for (const StepFigures& s : a.steps) kept.push_back(s.step);
  EXPECT_EQ(kept, (std::vector<int32_t>{1, 4, 5, 6}));
  std::set<int32_t> in_segments;
  for (const Segment& s : a.segments) in_segments.insert(s.step);
  EXPECT_EQ(in_segments, (std::set<int32_t>{0, 1, 4, 5, 6}));
  EXPECT_EQ(a.steady_peak.step, 4);
  EXPECT_EQ(a.steady_max[kT], 900) << "maxima cover the steps not kept";
  AnalysisOptions all;
  all.keep.all = true;
  EXPECT_EQ(Analyze(SixSteps(), all).steps.size(), 6u);
}

// Note [Killed capture]: without its end record the capture ends after
// its last record; what was pending in the forward then is activations.
// Note [Named scopes], on a hand-made session whose steady-state peak is
// step 2 (weights 1000 at set-up):
//   step 1: "early" scope: act 10 (seq 2)
//   step 2 forward:
//     block.0    act 100 (seq 20)          tmp 10 (21, freed 22)
//       block.0.attn  act 40 (23)  tmp 7 (24, freed 26)
//                     tmp 5 (25, freed 27: another thread's, at a seq
//                     inside the scope)
//     block.0 (attn closed at 26)  tmp 20 (28, freed 29)
//                     act 8 (30, freed 31: before backward)
//     block.1    act 60 (32)  tmp 3 (33, freed 50: after the scope)
//     outside    act 9 (34)
//   step 2 backward (35): block.1 again: act 11 (36, freed 38: after
//     backward began), tmp 30 (37, freed 39)
Capture ScopedSteps() {
  using C = Category;
  return WriteCapture(
      {Block(0, kLive, 1000, C::kWeights), Block(2, 5, 10, C::kActivations),
       Block(20, 40, 100, C::kActivations), Block(21, 22, 10, C::kTemporaries),
       Block(23, 41, 40, C::kActivations), Block(24, 26, 7, C::kTemporaries),
       Block(25, 27, 5, C::kTemporaries), Block(28, 29, 20, C::kTemporaries),
       Block(30, 31, 8, C::kActivations), Block(32, 45, 60, C::kActivations),
       Block(33, 50, 3, C::kTemporaries), Block(34, 46, 9, C::kActivations),
       Block(36, 38, 11, C::kActivations), Block(37, 39, 30, C::kTemporaries)},
      {{0, Phase::kModelInit, 0},
       {1, Phase::kForward, 1},
       {4, Phase::kBackward, 1},
       {20, Phase::kForward, 2},
       {35, Phase::kBackward, 2},
       {51, Phase::kIdle, 0}},
      0, 51, "", true,
      {{2, "early"},
       {3, ""},
       {20, "block.0"},
       {23, "block.0.attn"},
       {26, ""},
       {32, ""},
       {32, "block.1"},
       {34, ""},
       {36, "block.1"},
       {38, ""}});
}

TEST(Analyze, ScopesCountTheirBlocksInTheSteadyPeaksStep) {
  const Analysis a = Analyze(ScopedSteps());
  ASSERT_EQ(a.series_step, 2);
  ASSERT_EQ(a.scopes.size(), 3u);  // "early" was opened in step 1 only
  EXPECT_EQ(a.scopes[0].name, "block.0");
  EXPECT_EQ(a.scopes[1].name, "block.0.attn");
  EXPECT_EQ(a.scopes[2].name, "block.1");
  // Every open scope counts a block: block.0 holds its inner scope's 40.
  EXPECT_EQ(a.scopes[0].activations_bytes, 100 + 40);
  EXPECT_EQ(a.scopes[1].activations_bytes, 40);
  // Not the 11 its reopening in backward allocated.
  EXPECT_EQ(a.scopes[2].activations_bytes, 60);
  // The other thread's 5 counts by its seq; the 7 freed after attn closed
  // still leaves block.0's count.
  EXPECT_EQ(a.scopes[1].temporaries_peak_bytes, 7 + 5);
  EXPECT_EQ(a.scopes[0].temporaries_peak_bytes, 20);
  // The larger of its two openings (3, then 30).
  EXPECT_EQ(a.scopes[2].temporaries_peak_bytes, 30);
}

// A rank killed inside a scope: the capture still reads, the scope closed
// at its end.
TEST(Analyze, AKilledCaptureInsideAScopeStillReads) {
  const Capture capture = WriteCapture(
      {Block(0, kLive, 100, Category::kWeights),
       Block(2, kLive, 40, Category::kActivations)},
      {{0, Phase::kModelInit, 0}, {1, Phase::kForward, 1}}, 0, 3, "",
      /*ended=*/false, {{1, "h.0"}});
  const Analysis a = Analyze(capture);
  EXPECT_TRUE(a.killed);
  ASSERT_EQ(a.scopes.size(), 1u);
  EXPECT_EQ(a.scopes[0].name, "h.0");
  EXPECT_EQ(a.scopes[0].activations_bytes, 0);  // backward never began
}

TEST(Analyze, AScopeClosedButNeverOpenedIsADamagedCapture) {
  const Capture capture =
      WriteCapture({Block(1, 2, 8, Category::kTemporaries)},
                   {{0, Phase::kIdle, 0}, {1, Phase::kForward, 1}}, 0, 3, "",
                   true, {{1, ""}});
  EXPECT_THROW(Analyze(capture), InputError);
}

// A step the kill cut short is out of the steady state when a whole step
// is in it: its pending blocks are no steady-state figure.
TEST(Analyze, AStepCutShortByAKillIsOutOfTheSteadyState) {
  const Capture capture =
      WriteCapture({Block(0, kLive, 100, Category::kWeights),
                    Block(2, 3, 30, Category::kTemporaries),
                    Block(5, kLive, 40, Category::kUnattributed)},
                   {{0, Phase::kModelInit, 0},
                    {1, Phase::kForward, 1},
                    {4, Phase::kForward, 2}},
                   0, 6, "", /*ended=*/false);
  const Analysis a = Analyze(capture, AnalysisOptions{/*one_time=*/0, {}});
  EXPECT_TRUE(a.killed);
  EXPECT_EQ(a.steady_first_step, 1);
  EXPECT_EQ(a.steady_last_step, 1);
  EXPECT_EQ(a.steady_peak.total_bytes, 130);
  // The cut forward's block, pending at the kill: activations (Note
  // [Killed capture]), in the run's figures but not the steady state's.
  EXPECT_EQ(a.steady_max[kA], 0);
  EXPECT_EQ(a.stats[kA].current, 40);
}

TEST(Analyze, AKilledCaptureEndsAtItsLastRecord) {
  const Capture capture =
      WriteCapture({Block(0, kLive, 100, Category::kWeights),
                    Block(2, kLive, 40, Category::kUnattributed),
                    Block(3, 4, 8, Category::kTemporaries)},
                   {{0, Phase::kIdle, 0}, {1, Phase::kForward, 1}}, 0, 5, "",
                   /*ended=*/false);
  const Analysis a = Analyze(capture);
  EXPECT_TRUE(a.killed);
  EXPECT_EQ(a.end_seq, 5);
  EXPECT_EQ(a.last_mark.phase, Phase::kForward);
  EXPECT_EQ(a.stats[kA].current, 40);
  EXPECT_EQ(a.stats[kW].current, 100);
  EXPECT_EQ(a.run_peak.total_bytes, 148);
  EXPECT_FALSE(Analyze(TwoSteps()).killed);
}

}  // namespace
}  // namespace memprof
