// fit --runs's arithmetic (Note [Fit from runs]): the law per moment, its
// residual and when it is refused, the verdicts, ZeRO priced from the
// measured model state, and a GPU run's figure; from synthetic figures and
// rank reports (no tensors).
#include "profiler/predict/fit_runs.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "profiler/base/errors.h"
#include "profiler/report/fit_runs_reader.h"
#include "profiler/report/rank_report.h"
#include "tests/temp_dir.h"

namespace memprof {
namespace {

// Model state 4,000 B (weights 1,000, gradients 1,000, Adam 2,000). Two
// moments: the optimizer step, model state + 500 B of workspace + the
// batch, 10 B a sample; backward, model state + 100 B + 300 B a sample.
// The peak is the optimizer step at micro-batch 1 and backward from 2 on.
FitRunFigures Synthetic(int64_t micro_batch, int64_t backward_extra = 0) {
  FitRunFigures run;
  run.dir = "run-" + std::to_string(micro_batch);
  run.micro_batch = micro_batch;
  run.weights_bytes = 1000;
  run.gradients_bytes = 1000;
  run.optimizer_state_bytes = 2000;
  run.moments = {
      {"backward of the later steps", 4100 + 300 * micro_batch + backward_extra,
       /*activations_live=*/true},
      {"optimizer of the later steps", 4500 + 10 * micro_batch,
       /*activations_live=*/false}};
  return run;
}

std::string MessageOf(const std::vector<FitRunFigures>& runs,
                      int64_t budget = 6000) {
  try {
    FitRuns(runs, budget, 1, 1);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// Two runs determine each moment's line; the peak is the largest line, so
// the largest micro-batch under 6,000 B is backward's (4,100 + 300 b: 6),
// not what one line through the two peaks (4,510 and 4,700 B) would give
// (8).
TEST(FitRunsTest, TwoRunsDetermineALawPerMoment) {
  const RunsFit fit = FitRuns({Synthetic(2), Synthetic(1)}, 6000, 1, 1);
  EXPECT_TRUE(fit.determined);
  EXPECT_EQ(fit.residual_bytes, 0);
  ASSERT_EQ(fit.laws.size(), 2u);
  EXPECT_DOUBLE_EQ(fit.laws[0].base_bytes, 4100);
  EXPECT_DOUBLE_EQ(fit.laws[0].slope_bytes, 300);
  EXPECT_EQ(fit.answer.verdict, FitVerdict::kFits);
  EXPECT_EQ(fit.answer.model_state_bytes, 4000);
  EXPECT_EQ(fit.answer.peak1_bytes, 4510);  // the optimizer step's
  EXPECT_EQ(fit.peak_moment, "optimizer of the later steps");
  EXPECT_EQ(fit.answer.largest_micro_batch, 6);
  EXPECT_EQ(fit.answer.largest_peak_bytes, 5900);
  // The measured peaks are reproduced.
  EXPECT_EQ(PredictedRunsPeak(fit.laws, 1, nullptr), 4510);
  EXPECT_EQ(PredictedRunsPeak(fit.laws, 2, nullptr), 4700);
  const std::string text = FormatRunsFit(fit, "cnn", /*program=*/true);
  EXPECT_NE(text.find("two runs determine the law and do not test it: add "
                      "a run at micro-batch 4"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("backward of the later steps: 4,100 B + 300 B x "
                      "micro-batch"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("largest micro-batch per rank that fits: 6"),
            std::string::npos)
      << text;
}

TEST(FitRunsTest, ThreeRunsOnTheLineAreTested) {
  const RunsFit fit =
      FitRuns({Synthetic(1), Synthetic(2), Synthetic(4)}, 6000, 1, 1);
  EXPECT_FALSE(fit.determined);
  EXPECT_EQ(fit.residual_bytes, 0);
  EXPECT_DOUBLE_EQ(fit.residual_limit_bytes, 150);  // half of 300 B a sample
  // Within the limit: 100 B off at micro-batch 4 is accepted.
  const RunsFit near =
      FitRuns({Synthetic(1), Synthetic(2), Synthetic(4, 100)}, 6000, 1, 1);
  EXPECT_GT(near.residual_bytes, 0);
  EXPECT_LE(near.residual_bytes, near.residual_limit_bytes);
  const std::string text = FormatRunsFit(near, "cnn", true);
  EXPECT_NE(text.find("within the limit of half the largest bytes per sample"),
            std::string::npos)
      << text;
}

TEST(FitRunsTest, NonLinearRunsAreRefused) {
  const std::string message =
      MessageOf({Synthetic(1), Synthetic(2), Synthetic(4, 1200)});
  EXPECT_NE(message.find("--runs: the runs do not follow a straight line in "
                         "the micro-batch: the backward of the later steps"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("micro-batch 4: 6,500 B measured"), std::string::npos)
      << message;
  EXPECT_NE(message.find("leave out the run that is off"), std::string::npos)
      << message;
}

TEST(FitRunsTest, ModelStateThatChangesWithTheMicroBatchIsRefused) {
  FitRunFigures changed = Synthetic(2);
  changed.gradients_bytes = 1600;
  const std::string message = MessageOf({Synthetic(1), changed});
  EXPECT_NE(message.find("--runs: the model state changes with the "
                         "micro-batch: gradients are 1000 B (1,000 B) in "
                         "run-1 (micro-batch 1) but 1.56 KiB (1,600 B) in "
                         "run-2 (micro-batch 2)"),
            std::string::npos)
      << message;
}

TEST(FitRunsTest, OneMicroBatchIsRefused) {
  EXPECT_NE(MessageOf({Synthetic(2), Synthetic(2)})
                .find("every run is at micro-batch 2: a law in the "
                      "micro-batch needs runs at two different micro-batches "
                      "at least; run the program again at micro-batch 3"),
            std::string::npos);
}

TEST(FitRunsTest, RunsWithDifferentMomentsAreRefused) {
  FitRunFigures fewer = Synthetic(2);
  fewer.moments.pop_back();
  EXPECT_NE(MessageOf({Synthetic(1), fewer})
                .find("do not have the same phases and steps"),
            std::string::npos);
}

// Note [Fit verdicts], from runs.
TEST(FitRunsTest, Verdicts) {
  // The model state alone over the budget; ZeRO priced from it at 4 ranks
  // plus what micro-batch 1 adds (510 B): ZeRO-2 is 1,000 + 250 + 500 +
  // 510 B.
  const RunsFit state = FitRuns({Synthetic(1), Synthetic(2)}, 3000, 1, 4);
  EXPECT_EQ(state.answer.verdict, FitVerdict::kModelStateOverflow);
  EXPECT_TRUE(state.answer.model_state_alone_overflows);
  EXPECT_EQ(state.answer.zero_peak_bytes[2], 2260);
  EXPECT_EQ(state.answer.zero_stage, 2);
  // At one rank ZeRO shards nothing: no stage is offered.
  const RunsFit alone = FitRuns({Synthetic(1), Synthetic(2)}, 3000, 1, 1);
  EXPECT_EQ(alone.answer.verdict, FitVerdict::kModelStateOverflow);
  EXPECT_EQ(alone.answer.zero_stage, 0);
  // Micro-batch 1 over at the optimizer step, no activation live: the
  // model state's overflow too.
  const RunsFit optimizer = FitRuns({Synthetic(1), Synthetic(2)}, 4505, 1, 1);
  EXPECT_EQ(optimizer.answer.verdict, FitVerdict::kModelStateOverflow);
  EXPECT_FALSE(optimizer.answer.model_state_alone_overflows);
  EXPECT_EQ(optimizer.answer.largest_micro_batch, 0);
  // Micro-batch 8 on 2 ranks over 5,000 B: the largest that fits is 3
  // (4,100 + 900 B), which does not divide the global batch of 16; 2 on 8
  // ranks keeps it (Note [Keeping the global batch]).
  const RunsFit activations = FitRuns({Synthetic(1), Synthetic(2)}, 5000, 8, 2);
  EXPECT_EQ(activations.answer.verdict, FitVerdict::kActivationOverflow);
  EXPECT_EQ(activations.answer.largest_micro_batch, 3);
  ASSERT_FALSE(activations.answer.levers.empty());
  EXPECT_EQ(activations.answer.levers[0].what,
            "a smaller micro-batch per rank: 2 on 8 ranks keeps the global "
            "batch");
  const std::string text = FormatRunsFit(activations, "cnn", true);
  EXPECT_NE(text.find("not priced: activation checkpointing, bf16 autocast, a "
                      "shorter sequence: memprof has no size table for a "
                      "program's own model"),
            std::string::npos)
      << text;
}

// Runs made under ZeRO-1 measured a shard of the optimizer state: sharding
// it again would price ZeRO too low, so it is not priced, and says why.
TEST(FitRunsTest, RunsUnderZeroDoNotPriceZero) {
  std::vector<FitRunFigures> runs = {Synthetic(1), Synthetic(2)};
  for (FitRunFigures& run : runs) run.zero_stage = 1;
  const RunsFit fit = FitRuns(runs, 3000, 1, 4);
  EXPECT_EQ(fit.answer.verdict, FitVerdict::kModelStateOverflow);
  EXPECT_EQ(fit.answer.zero_stage, 0);
  EXPECT_EQ(fit.answer.zero_peak_bytes[2], 0);
  EXPECT_TRUE(fit.answer.levers.empty());
  const std::string text = FormatRunsFit(fit, "cnn", true);
  EXPECT_NE(text.find("ZeRO: not priced: the runs were made with ZeRO-1"),
            std::string::npos)
      << text;
}

// A rank report of a GPU run: what fit compares is the most reserved plus
// the memory outside the allocator (the most any moment measured), the
// latter counted with the model state.
RankReport GpuReport(int64_t micro_batch, int64_t reserved, int64_t outside) {
  RankReport r;
  r.context.device = "cuda";
  r.micro_batch = micro_batch;
  r.categories[Index(Category::kWeights)].peak_bytes = 1 << 20;
  r.categories[Index(Category::kGradients)].peak_bytes = 1 << 20;
  r.categories[Index(Category::kOptimizerState)].peak_bytes = 2 << 20;
  CudaRun cuda;
  cuda.peak_reserved = reserved;
  cuda.moments = {{"cuda_context", 300 << 20, 0, 0},
                  {"step_1", (int64_t{outside} + reserved), reserved, 0}};
  r.cuda_run = cuda;
  return r;
}

TEST(FitRunsTest, OnAGpuReservedPlusOutsideTheAllocator) {
  const int64_t mib = 1 << 20;
  std::vector<FitRunFigures> runs;
  for (int64_t b : {1, 2}) {
    const RunView view =
        RunViewOf("gpu-" + std::to_string(b),
                  {GpuReport(b, (18 + 2 * b) * mib, (500 + b) * mib)});
    runs.push_back(FiguresOfRun(view));
  }
  EXPECT_TRUE(runs[0].gpu);
  EXPECT_EQ(runs[1].outside_allocator_bytes, 502 * mib);
  ASSERT_EQ(runs[0].moments.size(), 1u);
  EXPECT_EQ(runs[0].moments[0].bytes, 20 * mib);
  // Reserved 18 + 2 b MiB, plus the 502 MiB outside: 540 MiB at 10.
  const RunsFit fit = FitRuns(runs, 540 * mib, 1, 1);
  EXPECT_TRUE(fit.answer.device.gpu);
  EXPECT_EQ(fit.answer.peak1_bytes, 522 * mib);
  EXPECT_EQ(fit.answer.largest_micro_batch, 10);
  EXPECT_EQ(fit.answer.largest_peak_bytes, 540 * mib);
  // The model state (4 MiB) fits alone only with the memory outside.
  const RunsFit state = FitRuns(runs, 505 * mib, 1, 1);
  EXPECT_TRUE(state.answer.model_state_alone_overflows);
  EXPECT_EQ(state.answer.verdict, FitVerdict::kModelStateOverflow);
}

}  // namespace
}  // namespace memprof
