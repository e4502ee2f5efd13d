// The public API end to end: a program of a user's kind (session_program.cc)
// profiled through <memprof/memprof.h> alone, and its misuses.
#include <filesystem>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "profiler/report/rank_report.h"
#include "tests/run_command.h"
#include "tests/temp_dir.h"
#include "tests/text_file.h"

namespace memprof {
namespace {

CommandResult RunProgram(const std::string& args) {
  return RunCommand(std::string(MEMPROF_SESSION_PROGRAM) + " " + args);
}

class SessionTest : public TempDirTest {};

// The session program's Net: fc1 32x64+64, norm 64+64, fc2 64x10+10.
constexpr int64_t kNetParameters = 32 * 64 + 64 + 64 + 64 + 64 * 10 + 10;

// Weights (the parameters and BatchNorm's buffers: 2 x 64 floats and one
// int64), and the gradients and AdamW state of `trained` parameters,
// measured and predicted to the byte.
void ExpectModelState(const RankReport& report, int64_t trained) {
  const int64_t weights = 4 * kNetParameters + 4 * 128 + 8;
  for (const auto& [category, bytes] :
       {std::pair{Category::kWeights, weights},
        std::pair{Category::kGradients, 4 * trained},
        std::pair{Category::kOptimizerState, 8 * trained}}) {
    EXPECT_EQ(report.Of(category).peak_bytes, bytes) << CategoryName(category);
    EXPECT_EQ(report.Of(category).predicted_bytes, bytes)
        << CategoryName(category);
  }
}

// Model state of a model memprof has no size table for, predicted from the
// tracked parameters and the optimizer alone, measured to the byte.
TEST_F(SessionTest, ProgramModelStateMeasuredAsPredictedToTheByte) {
  const CommandResult run = RunProgram("train " + dir_.string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const RankReport report = ReadRankReport(RankReportPath(dir_.string(), 0));
  EXPECT_EQ(report.context.config.model, "program");
  EXPECT_EQ(report.context.config.program.name, "session-program");
  EXPECT_EQ(report.context.config.train.optimizer, "adamw");
  EXPECT_EQ(report.predicted_parameters, kNetParameters);
  ExpectModelState(report, kNetParameters);
  EXPECT_EQ(report.Of(Category::kDdpBuckets).peak_bytes, 0);
  EXPECT_EQ(report.Of(Category::kDdpBuckets).predicted_bytes, 0);
  // The batch: 16 x 32 floats and 16 labels.
  EXPECT_EQ(report.Of(Category::kInputs).peak_bytes, 16 * 32 * 4 + 16 * 8);
  EXPECT_GT(report.Of(Category::kActivations).peak_bytes, 0);
  EXPECT_EQ(report.Of(Category::kUnattributed).end_bytes, 0);
  EXPECT_EQ(report.Of(Category::kUnattributed).allocated_bytes, 0);
  EXPECT_EQ(report.steps.size(), 4u);
  // Its named scopes, in the order they opened; a program's have no
  // prediction.
  ASSERT_EQ(report.scopes.size(), 2u);
  EXPECT_EQ(report.scopes[0].name, "fc1");
  EXPECT_EQ(report.scopes[1].name, "fc2");
  int64_t in_scopes = 0;
  for (const ScopeReport& scope : report.scopes) {
    EXPECT_GT(scope.activations_bytes, 0) << scope.name;
    EXPECT_FALSE(scope.predicted_activations_bytes.has_value()) << scope.name;
    in_scopes += scope.activations_bytes;
  }
  // Every activation is made inside one of the two scopes but the loss's.
  EXPECT_LE(in_scopes, report.Of(Category::kActivations).peak_bytes);
  for (const char* file : {"summary.json", "report.md", "report.html",
                           "trace.json", "snapshot-0.json"}) {
    EXPECT_TRUE(std::filesystem::exists(dir_ / file)) << file;
  }
  EXPECT_FALSE(std::filesystem::exists(dir_ / "capture-0.bin"));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "capture-0.program.json"));
  // `memprof report` renders it as it renders a profile's.
  const CommandResult rendered = RunMemprof("report --run " + dir_.string());
  EXPECT_EQ(rendered.exit_code, 0) << rendered.output;
  const std::string markdown = ReadFile(dir_ / "report.md");
  EXPECT_NE(markdown.find("program: name session-program"), std::string::npos)
      << markdown;
  EXPECT_NE(markdown.find("| train.optimizer | adamw | Track(optimizer) |"),
            std::string::npos)
      << markdown;
  // No Reducer tracked: no DDP bucket rebuild to speak of.
  EXPECT_NE(markdown.find("Step 1 creates the gradients and the optimizer "
                          "state; the steady state starts at step 2."),
            std::string::npos)
      << markdown;
  EXPECT_EQ(markdown.find("DDP rebuilds"), std::string::npos) << markdown;
}

// Gradient accumulation in a program's loop (Note [Micro-batches in a
// step]): Inputs, Forward and Backward four times inside one Step(). The
// reports number the micro-batches, count them per step and in the config,
// and the phase rule holds across them, measured: the activations of
// micro-batch k are live when its backward begins and freed before
// micro-batch k + 1 begins; model state is measured as predicted.
TEST_F(SessionTest, AccumulatedMicroBatchesAreMarkedApart) {
  const CommandResult run = RunProgram("accumulate " + dir_.string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const RankReport report = ReadRankReport(RankReportPath(dir_.string(), 0));
  EXPECT_EQ(report.context.config.train.grad_accum, 4);
  EXPECT_EQ(report.context.config.train.micro_batch, 4);
  EXPECT_EQ(report.context.config.train.global_batch, 16);
  ASSERT_EQ(report.steps.size(), 4u);
  for (const StepReport& step : report.steps) {
    EXPECT_EQ(step.micro_batches, 4) << "step " << step.step;
  }
  ExpectModelState(report, kNetParameters);
  // The batch of one micro-batch: 4 x 32 floats and 4 labels.
  EXPECT_EQ(report.Of(Category::kInputs).peak_bytes, 4 * 32 * 4 + 4 * 8);
  EXPECT_EQ(report.Of(Category::kUnattributed).allocated_bytes, 0);
  const int activations = Index(Category::kActivations);
  int forwards = 0;
  for (const TimelineSegment& seg : report.timeline) {
    if (seg.step < 1) continue;
    const bool in_micro_batch = seg.phase == Phase::kInputs ||
                                seg.phase == Phase::kForward ||
                                seg.phase == Phase::kBackward;
    EXPECT_EQ(seg.micro_batch > 0, in_micro_batch)
        << "step " << seg.step << " " << PhaseName(seg.phase);
    if (seg.phase == Phase::kInputs || seg.phase == Phase::kForward) {
      EXPECT_EQ(seg.begin_bytes[activations], 0)
          << "step " << seg.step << " micro-batch " << seg.micro_batch
          << ": activations of the micro-batch before still live";
    }
    if (seg.phase == Phase::kBackward) {
      EXPECT_GT(seg.begin_bytes[activations], 0)
          << "step " << seg.step << " micro-batch " << seg.micro_batch;
    }
    if (seg.phase == Phase::kForward) {
      ++forwards;
      EXPECT_EQ(seg.micro_batch, (forwards - 1) % 4 + 1) << "step " << seg.step;
    }
  }
  EXPECT_EQ(forwards, 16);
}

// A program that leaves Finish() to the session's destructor, the session
// declared first as the header shows: the model and the optimizer are
// destroyed before it, and it finishes without touching them.
TEST_F(SessionTest, DestructorFinishesAfterTheProgramsObjectsAreGone) {
  const CommandResult run = RunProgram("no-finish " + dir_.string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const RankReport report = ReadRankReport(RankReportPath(dir_.string(), 0));
  EXPECT_EQ(report.steps.size(), 2u);
  EXPECT_EQ(report.context.config.train.optimizer, "adamw");
  EXPECT_EQ(report.context.config.train.lr, 1e-3);
  EXPECT_EQ(report.Of(Category::kOptimizerState).peak_bytes,
            8 * kNetParameters);
  EXPECT_TRUE(std::filesystem::exists(dir_ / "report.md"));
}

// A program that freezes parameters (requires_grad false) and still gives
// them all to AdamW: no gradient, optimizer state or bucket space for the
// frozen ones, measured and predicted (Note [Frozen parameters]).
TEST_F(SessionTest, FrozenParametersHaveNoGradientOrOptimizerState) {
  const CommandResult run = RunProgram("frozen " + dir_.string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const RankReport report = ReadRankReport(RankReportPath(dir_.string(), 0));
  const int64_t trained = 64 * 10 + 10;  // fc2 alone
  EXPECT_EQ(report.parameters, kNetParameters);
  EXPECT_EQ(report.trained_parameters, trained);
  EXPECT_EQ(report.predicted_trained_parameters, trained);
  ExpectModelState(report, trained);
  EXPECT_EQ(report.Of(Category::kUnattributed).allocated_bytes, 0);
  const std::string markdown = ReadFile(dir_ / "report.md");
  EXPECT_NE(markdown.find("Frozen parameters: 2,890 parameters: 650 trained "
                          "(16 bytes each: weights 4 + gradients 4 + "
                          "optimizer 8), 2,240 frozen (4 bytes each: the "
                          "weight alone)."),
            std::string::npos)
      << markdown;
}

TEST_F(SessionTest, OutOfMemoryIsReportedWhereItHappened) {
  const CommandResult run = RunProgram("oom " + dir_.string());
  ASSERT_EQ(run.exit_code, 3) << run.output;
  const RankReport report = ReadRankReport(RankReportPath(dir_.string(), 0));
  ASSERT_TRUE(report.out_of_memory.has_value());
  EXPECT_EQ(report.out_of_memory->limit_bytes, 40 << 10);
  EXPECT_EQ(report.out_of_memory->fit.verdict, FitVerdict::kNotPredicted);
  // The sentence speaks of the program's model state, predicted exactly.
  EXPECT_NE(run.output.find("memprof: out of memory in "), std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("is alone over 40.0 KiB"), std::string::npos)
      << run.output;
}

// An out-of-memory error left to leave the session's scope: no report is
// written, the message says how to recover them, and `memprof report --run`
// does, from the capture the session leaves (Note [Post-mortem]).
TEST_F(SessionTest, AnAbandonedSessionIsRecoveredFromItsCapture) {
  const CommandResult run = RunProgram("oom-uncaught " + dir_.string());
  ASSERT_EQ(run.exit_code, 3) << run.output;
  EXPECT_NE(run.output.find("no reports written (catch it and call Finish() "
                            "to write them, or recover them from the capture "
                            "with `memprof report --run DIR`)"),
            std::string::npos)
      << run.output;
  EXPECT_FALSE(std::filesystem::exists(RankReportPath(dir_.string(), 0)));
  EXPECT_TRUE(std::filesystem::exists(dir_ / "capture-0.program.json"));
  const CommandResult recovered = RunMemprof("report --run " + dir_.string());
  EXPECT_EQ(recovered.exit_code, 0) << recovered.output;
  // Note [Program ending]: the session said how it ended.
  EXPECT_NE(recovered.output.find(
                "memprof: rank 0 failed before writing its report (left by an "
                "exception before Finish(), after its memory limit refused an "
                "allocation): recovered "),
            std::string::npos)
      << recovered.output;
  const RankReport report = ReadRankReport(RankReportPath(dir_.string(), 0));
  ASSERT_TRUE(report.post_mortem.has_value()) << recovered.output;
  // Note [Program meta]: with what the program had tracked, predicted as
  // Finish() would have: the parameters, the optimizer, the micro-batch
  // and the model state to the byte.
  EXPECT_EQ(report.predicted_parameters, kNetParameters);
  EXPECT_EQ(report.context.config.train.optimizer, "adamw");
  EXPECT_EQ(report.micro_batch, 16);
  const int64_t weights = 4 * kNetParameters + 4 * 128 + 8;
  EXPECT_EQ(report.Of(Category::kWeights).predicted_bytes, weights);
  EXPECT_EQ(report.Of(Category::kGradients).predicted_bytes,
            4 * kNetParameters);
  EXPECT_EQ(report.Of(Category::kOptimizerState).predicted_bytes,
            8 * kNetParameters);
  EXPECT_EQ(report.Of(Category::kWeights).peak_bytes, weights);
  // A session's own: one of an earlier session of the same process, left
  // in the directory, is not taken for it.
  const CommandResult again = RunProgram("tensor-first " + dir_.string());
  EXPECT_NE(again.exit_code, 0);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "capture-0.program.json"));
}

// Note [Program ending]: an exception nothing catches ends the program in
// std::terminate; the session's handler says which before the one it
// chained to aborts, and the recovery names it by its first line.
TEST_F(SessionTest, AnUncaughtExceptionIsNamedWhenTheRankIsRecovered) {
  const CommandResult run = RunProgram("throw-uncaught " + dir_.string());
  EXPECT_NE(run.exit_code, 0) << run.output;
  EXPECT_TRUE(std::filesystem::exists(dir_ / "capture-0.ending"));
  const CommandResult recovered = RunMemprof("report --run " + dir_.string());
  EXPECT_EQ(recovered.exit_code, 0) << recovered.output;
  EXPECT_NE(recovered.output.find(
                "memprof: rank 0 failed before writing its report (an "
                "uncaught exception: the data loader ran dry): recovered "),
            std::string::npos)
      << recovered.output;
  const RankReport report = ReadRankReport(RankReportPath(dir_.string(), 0));
  ASSERT_TRUE(report.post_mortem.has_value());
  EXPECT_EQ(report.post_mortem->killed_by,
            "failed: an uncaught exception: the data loader ran dry");
  // The program's loop decided its steps: none is said to be configured.
  const std::string markdown = ReadFile(dir_ / "report.md");
  EXPECT_NE(markdown.find("- **steps**: stopped in step 2 (failed)"),
            std::string::npos)
      << markdown;
  EXPECT_EQ(markdown.find(" of 1;"), std::string::npos) << markdown;
  // A later session of the program takes none of it for its own.
  ASSERT_EQ(RunProgram("train " + dir_.string()).exit_code, 0);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "capture-0.ending"));
}

// A program that ran one step never reached its steady state (step 1
// creates the gradients and the optimizer state): the reports say whose
// figures they are, and the gate keeps no baseline of it (exit 2, naming
// the steps to run).
TEST_F(SessionTest, OneStepReachesNoSteadyStateAndIsNotGated) {
  const CommandResult run = RunProgram("one-step " + dir_.string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const RankReport report = ReadRankReport(RankReportPath(dir_.string(), 0));
  EXPECT_EQ(report.steady_from, 2);
  ASSERT_EQ(report.steps.size(), 1u);
  EXPECT_FALSE(report.steps[0].steady_state);
  const std::string markdown = ReadFile(dir_ / "report.md");
  EXPECT_NE(markdown.find("completed no steady-state step"), std::string::npos)
      << markdown;
  const CommandResult baseline =
      RunMemprof("baseline --run " + dir_.string() + " --out " +
                 (dir_ / "base.json").string());
  EXPECT_EQ(baseline.exit_code, 2) << baseline.output;
  EXPECT_NE(baseline.output.find(
                "rank 0 ran 1 step, and its steady state begins at step 2"),
            std::string::npos)
      << baseline.output;
  EXPECT_NE(baseline.output.find("run at least 2 steps"), std::string::npos)
      << baseline.output;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "base.json"));
  // Four steps reach it, from step 2.
  const std::filesystem::path four = dir_ / "four";
  ASSERT_EQ(RunProgram("train " + four.string()).exit_code, 0);
  const RankReport trained = ReadRankReport(RankReportPath(four.string(), 0));
  EXPECT_EQ(trained.steady_from, 2);
  EXPECT_TRUE(trained.steps[1].steady_state);
}

// Note [Tracked once]: a weight tied under a second name, the model
// tracked twice, a submodule and a parameter tracked again: each counted
// once, so the prediction is the plain model's, to the byte.
TEST_F(SessionTest, ATensorTrackedTwiceIsCountedOnce) {
  const CommandResult run = RunProgram("tied " + dir_.string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const RankReport report = ReadRankReport(RankReportPath(dir_.string(), 0));
  EXPECT_EQ(report.parameters, kNetParameters);
  EXPECT_EQ(report.predicted_parameters, kNetParameters);
  ExpectModelState(report, kNetParameters);
  // The program's name titles the reports.
  EXPECT_NE(ReadFile(dir_ / "report.md").find("memprof: session-program, "),
            std::string::npos);
}

// An optimizer left untracked: the reports say so ("none", no state
// predicted), and its state is the unattributed bytes that show it.
TEST_F(SessionTest, AnUntrackedOptimizerIsNoneNotSgd) {
  const CommandResult run = RunProgram("no-optimizer " + dir_.string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const RankReport report = ReadRankReport(RankReportPath(dir_.string(), 0));
  EXPECT_EQ(report.context.config.train.optimizer, "none");
  EXPECT_EQ(report.Of(Category::kOptimizerState).predicted_bytes, 0);
  EXPECT_EQ(report.Of(Category::kUnattributed).end_bytes, 8 * kNetParameters);
  const std::string markdown = ReadFile(dir_ / "report.md");
  EXPECT_NE(markdown.find("| train.optimizer | none | no optimizer tracked |"),
            std::string::npos)
      << markdown;
  EXPECT_EQ(markdown.find("SGD"), std::string::npos) << markdown;
}

// SessionOptions::memory_limit_bytes left 0: the limit is
// $MEMPROF_MEMORY_LIMIT's (what fit --measure sets for a program's runs).
TEST_F(SessionTest, MemoryLimitFromTheEnvironment) {
  const CommandResult run = RunCommand("MEMPROF_MEMORY_LIMIT=40KiB " +
                                       std::string(MEMPROF_SESSION_PROGRAM) +
                                       " limit-from-env " + dir_.string());
  ASSERT_EQ(run.exit_code, 3) << run.output;
  const RankReport report = ReadRankReport(RankReportPath(dir_.string(), 0));
  ASSERT_TRUE(report.out_of_memory.has_value());
  EXPECT_EQ(report.out_of_memory->limit_bytes, 40 << 10);
  // Unset: no limit, the same program runs to the end.
  const CommandResult free_run = RunCommand(
      "env -u MEMPROF_MEMORY_LIMIT " + std::string(MEMPROF_SESSION_PROGRAM) +
      " limit-from-env " + (dir_ / "free").string());
  EXPECT_EQ(free_run.exit_code, 0) << free_run.output;
}

TEST_F(SessionTest, BadMemoryLimitVariableIsAUsageError) {
  const CommandResult run = RunCommand("MEMPROF_MEMORY_LIMIT=lots " +
                                       std::string(MEMPROF_SESSION_PROGRAM) +
                                       " train " + dir_.string());
  EXPECT_EQ(run.exit_code, 4) << run.output;
  EXPECT_NE(run.output.find("usage: memprof::Session: MEMPROF_MEMORY_LIMIT="
                            "'lots' is not a memory size"),
            std::string::npos)
      << run.output;
  EXPECT_FALSE(std::filesystem::exists(RankReportPath(dir_.string(), 0)));
}

// The launcher's variables, inconsistent: the program's input, refused in
// the API's terms (memprof::UsageError) naming the variable.
TEST_F(SessionTest, InconsistentLauncherVariablesAreAUsageError) {
  const CommandResult run = RunCommand(
      "env -u MASTER_ADDR -u MASTER_PORT RANK=1 WORLD_SIZE=2 " +
      std::string(MEMPROF_SESSION_PROGRAM) + " train " + dir_.string());
  EXPECT_EQ(run.exit_code, 4) << run.output;
  EXPECT_NE(run.output.find("usage: memprof::Session: "), std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("MASTER_ADDR"), std::string::npos) << run.output;
}

struct Misuse {
  const char* name;
  const char* expected;  // in the message
};
void PrintTo(const Misuse& misuse, std::ostream* out) { *out << misuse.name; }

class SessionMisuseTest : public ::testing::TestWithParam<Misuse> {};

TEST_P(SessionMisuseTest, RefusedWithTheRemedy) {
  TempDir dir;
  const CommandResult run =
      RunProgram(std::string(GetParam().name) + " " + dir.path().string());
  EXPECT_EQ(run.exit_code, 4) << run.output;
  EXPECT_NE(run.output.find(std::string("usage: ") + "memprof::Session"),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find(GetParam().expected), std::string::npos)
      << run.output;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SessionMisuseTest,
    ::testing::Values(
        Misuse{"tensor-first",
               "'fc1.weight' was allocated before the session began"},
        Misuse{"two-sessions", "a session already exists in this process"},
        Misuse{"phase-order", "each at most once"},
        Misuse{"nested-phase", "while Inputs()'s scope is still open"},
        Misuse{"no-marks", "ended without its Forward() and Backward() marks"},
        Misuse{"rmsprop", "Adam, AdamW and SGD only"},
        Misuse{"recompute-outside", "Recompute() outside Backward()"},
        Misuse{"finish-twice", "Finish(): called twice"},
        Misuse{"bad-device", "use \"cpu\" or \"cuda\""},
        Misuse{"finish-in-step", "Finish() while step 1's scope is still open"},
        Misuse{"no-steps", "Finish() before any Step()"},
        Misuse{"scope-order",
               "Scope(\"a\") ended while Scope(\"b\"), opened inside it, "
               "is still open"},
        Misuse{"forward-without-backward",
               "OptimizerStep() in step 1 after micro-batch 2's Forward() "
               "without its Backward()"},
        Misuse{"negative-micro-batch", "SessionOptions::micro_batch is -5"},
        Misuse{"unwritable-out",
               "cannot make the reports' directory '/dev/null/memprof-out'"}),
    [](const ::testing::TestParamInfo<Misuse>& info) {
      std::string name = info.param.name;
      for (char& c : name) {
        if (c == '-') c = '_';
      }
      return name;
    });

}  // namespace
}  // namespace memprof
