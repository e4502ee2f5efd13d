// memprof fit --runs end to end: the example program of examples/own-loop
// (built here against the in-tree targets) profiled at micro-batches 1 and
// 2, its largest micro-batch under a budget predicted from the runs and
// confirmed by fit --measure under that memory limit, on 1 rank and on 2
// under torchrun; gpt-tiny's runs against its size table; the sets of runs
// that are refused, and the commands that fail.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

#include "profiler/predict/fit_runs.h"
#include "profiler/report/fit_runs_reader.h"
#include "tests/run_command.h"
#include "tests/temp_dir.h"

namespace memprof {
namespace {

namespace fs = std::filesystem;

const std::string kGptTiny = MEMPROF_SOURCE_DIR "/configs/gpt-tiny.ini";
// The example's own loop, few steps.
const std::string kOwnLoop =
    std::string(MEMPROF_OWN_LOOP) + " --steps 3 --micro-batch ";
// Two ranks on this machine, the rendezvous on a free port.
const std::string kTorchrun = std::string(MEMPROF_TORCHRUN) +
                              " --standalone --nproc-per-node 2 --no-python ";

CommandResult Memprof(const std::string& args) {
  return RunCommand(std::string(MEMPROF_BINARY) + " " + args);
}

// The runs every test reads, made once.
class FitRunsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    const auto run = [](const std::string& command, const std::string& out) {
      const CommandResult r =
          RunCommand("MEMPROF_OUT=" + Dir(out) + " " + command);
      ASSERT_EQ(r.exit_code, 0) << command << "\n" << r.output;
    };
    run(kOwnLoop + "1", "one-1");
    run(kOwnLoop + "2", "one-2");
    run(kOwnLoop + "2 --width 17", "one-2-wide");
    run(kTorchrun + kOwnLoop + "1", "two-1");
    run(kTorchrun + kOwnLoop + "2", "two-2");
    for (const char* b : {"1", "2"}) {
      const CommandResult r = Memprof("profile --quiet --config " + kGptTiny +
                                      " --steps 3 --micro-batch " + b +
                                      " --out " + Dir(std::string("gpt-") + b));
      ASSERT_EQ(r.exit_code, 0) << r.output;
    }
  }
  static void TearDownTestSuite() { delete dir_; }

  static std::string Dir(const std::string& name) {
    return (dir_->path() / name).string();
  }
  static std::string Runs(const std::string& a, const std::string& b) {
    return "--runs " + Dir(a) + "," + Dir(b);
  }
  // A budget `fraction` of the way from the peak the runs' law predicts at
  // `largest` to the one above it: the law puts the largest micro-batch
  // that fits at `largest`, and a measurement that stays within the
  // budget at `largest` and passes it one above confirms it.
  static int64_t BudgetFor(const std::string& a, const std::string& b,
                           int64_t largest, double fraction = 0.5) {
    const RunsForFit runs = ReadRunsForFit({Dir(a), Dir(b)});
    const RunsFit fit = FitRuns(runs.runs, int64_t{1} << 40, 1, 1);
    const int64_t at = PredictedRunsPeak(fit.laws, largest, nullptr);
    const int64_t above = PredictedRunsPeak(fit.laws, largest + 1, nullptr);
    return at +
           static_cast<int64_t>(fraction * static_cast<double>(above - at));
  }

  // fit --runs A,B at the budget for `largest`, measured with `command`:
  // predicted, then micro-batch `largest` fits and one above it runs out.
  void ExpectConfirmed(const std::string& a, const std::string& b,
                       int64_t largest, double fraction,
                       const std::string& command) {
    const int64_t budget = BudgetFor(a, b, largest, fraction);
    TempDir out;
    const CommandResult r =
        Memprof("fit " + Runs(a, b) + " --budget " + std::to_string(budget) +
                " --measure --out " + (out.path() / "m").string() +
                " --command '" + command + "'");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    const std::string l = std::to_string(largest);
    const std::string above = std::to_string(largest + 1);
    EXPECT_NE(r.output.find("verdict: fits: micro-batch 1 peaks at"),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("largest micro-batch per rank that fits: " + l),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("two runs determine the law and do not test it"),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("micro-batch " + l + ": ran to completion"),
              std::string::npos)
        << r.output;
    EXPECT_NE(
        r.output.find("micro-batch " + above + ": ran out of memory (rank "),
        std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("the largest micro-batch per rank that fits is " +
                            l + ", as predicted"),
              std::string::npos)
        << r.output;
    // Each run in its own directory, the one above out of memory.
    const RankReport over = ReadRankReport(RankReportPath(
        (out.path() / "m" / ("micro-batch-" + above)).string(), 0));
    ASSERT_TRUE(over.out_of_memory.has_value());
    EXPECT_EQ(over.out_of_memory->limit_bytes, budget);
    EXPECT_TRUE(
        fs::exists(out.path() / "m" / ("micro-batch-" + l) / "rank-0.json"));
  }

  // The exit code and output of fit --runs `args` --budget 1GiB.
  CommandResult FitRuns1GiB(const std::string& args) {
    return Memprof("fit " + args + " --budget 1GiB");
  }

  static TempDir* dir_;
};
TempDir* FitRunsTest::dir_ = nullptr;

// The example's peak is not exactly linear at the smallest micro-batches:
// on 1 rank backward's peak grows by 28,712 B from micro-batch 1 to 2, then
// by 25,608 B a sample to 4; on 2 ranks by 19,912 B, then 27,656 B. The law
// of runs 1 and 2 is confirmed where that difference stays under the
// budget's margins: at 3 on 1 rank, at 2 on 2 ranks (the measured
// micro-batch above runs out of memory). Farther out only a third run
// tells.
TEST_F(FitRunsTest, ProgramOnOneRankPredictedAndConfirmed) {
  // Budget halfway: 3 fits by 17,460 B and 4 is over by 8,148 B.
  ExpectConfirmed("one-1", "one-2", 3, 0.5, kOwnLoop + "{micro_batch}");
}

// On 2 ranks the budget sits 95% of the way to the law's micro-batch 3
// (18,916 B above 2, 8,740 B below the measured 3): more than a DDP bucket
// (15,272 B) above 2, as Gloo's worker thread can still hold step 1's
// bucket when step 2 rebuilds the buckets on a loaded machine (seen once
// under ctest -j2: 30,544 B of buckets at the peak, a real out-of-memory
// at the budget's midpoint).
TEST_F(FitRunsTest, ProgramOnTwoRanksPredictedAndConfirmed) {
  ExpectConfirmed("two-1", "two-2", 2, 0.95,
                  kTorchrun + kOwnLoop + "{micro_batch}");
}

// gpt-tiny profiled at micro-batches 1 and 2: under the budget at which its
// runs put the largest micro-batch at 8, its size table says 8 too, give or
// take one.
TEST_F(FitRunsTest, GptTinyRunsAgreeWithTheSizeTable) {
  const int64_t budget = BudgetFor("gpt-1", "gpt-2", 8);
  const std::string fit =
      "fit " + Runs("gpt-1", "gpt-2") + " --budget " + std::to_string(budget);
  const CommandResult runs = Memprof(fit);
  EXPECT_EQ(runs.exit_code, 0) << runs.output;
  EXPECT_NE(runs.output.find("largest micro-batch per rank that fits: 8 "),
            std::string::npos)
      << runs.output;
  // Micro-batch 16 does not fit: the levers a size table prices are left
  // to fit --config.
  const CommandResult over = Memprof(fit + " --micro-batch 16");
  EXPECT_EQ(over.exit_code, 1) << over.output;
  EXPECT_NE(over.output.find("verdict: activation-overflow: "),
            std::string::npos)
      << over.output;
  EXPECT_NE(over.output.find("not priced from runs: activation "
                             "checkpointing, bf16 autocast, a shorter "
                             "sequence: memprof fit --config prices them"),
            std::string::npos)
      << over.output;
  const CommandResult table =
      Memprof("fit --config " + kGptTiny + " --micro-batch 1 --budget " +
              std::to_string(budget));
  std::smatch match;
  ASSERT_TRUE(std::regex_search(
      table.output, match,
      std::regex("largest micro-batch per rank that fits: ([0-9]+)")))
      << table.output;
  EXPECT_LE(std::abs(std::stoll(match[1].str()) - 8), 1) << table.output;
}

struct Refusal {
  const char* name;
  const char* a;
  const char* b;
  const char* expected;
};
void PrintTo(const Refusal& refusal, std::ostream* out) {
  *out << refusal.name;
}

class FitRunsRefusalTest : public FitRunsTest,
                           public ::testing::WithParamInterface<Refusal> {};

TEST_P(FitRunsRefusalTest, RefusedWithTheReasonAndTheRemedy) {
  fs::create_directories(Dir("not-a-run"));
  const CommandResult r = FitRuns1GiB(Runs(GetParam().a, GetParam().b));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(GetParam().expected), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("verdict"), std::string::npos) << r.output;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, FitRunsRefusalTest,
    ::testing::Values(
        Refusal{"different_models", "one-1", "gpt-2",
                "different models: own-loop-cnn in "},
        Refusal{"different_world_sizes", "one-1", "two-2",
                "different world sizes: 1 ranks in "},
        Refusal{"model_state_changes", "one-1", "one-2-wide",
                "the model state changes with the micro-batch: weights are "},
        Refusal{"one_micro_batch", "one-2", "one-2-wide",
                "every run is at micro-batch 2"},
        Refusal{"not_a_run", "one-1", "not-a-run", "is not a run"}),
    [](const ::testing::TestParamInfo<Refusal>& info) {
      return std::string(info.param.name);
    });

// A command that fails for another reason than memory is no verdict: exit
// 3, with what failed; one that runs too long is stopped.
TEST_F(FitRunsTest, FailedCommandsAreRunFailures) {
  const std::string fit =
      "fit " + Runs("one-1", "one-2") + " --budget 1MiB --measure ";
  const CommandResult failed = Memprof(fit + "--command 'false {micro_batch}'");
  EXPECT_EQ(failed.exit_code, 3) << failed.output;
  EXPECT_NE(failed.output.find("failed (exit 1), not for memory; see "),
            std::string::npos)
      << failed.output;
  const CommandResult slow =
      Memprof(fit + "--command-timeout 1 --command 'sleep 60 # {micro_batch}'");
  EXPECT_EQ(slow.exit_code, 3) << slow.output;
  EXPECT_NE(slow.output.find("did not finish within 1 s (--command-timeout) "
                             "and was stopped"),
            std::string::npos)
      << slow.output;
  // Note [Command log cap]: a command that prints without end leaves a
  // log of its first 16 MiB and its last 64 KiB.
  TempDir out;
  const CommandResult loud =
      Memprof(fit + "--command-timeout 2 --out " + (out.path() / "m").string() +
              " --command 'yes {micro_batch}'");
  EXPECT_EQ(loud.exit_code, 3) << loud.output;
  bool capped = false;
  for (const auto& entry : fs::directory_iterator(out.path() / "m")) {
    if (entry.path().extension() != ".log") continue;
    EXPECT_LE(entry.file_size(), (16u << 20) + (64u << 10) + 200)
        << entry.path();
    std::ifstream log(entry.path());
    const std::string text{std::istreambuf_iterator<char>(log),
                           std::istreambuf_iterator<char>()};
    capped |= text.find(
                  "bytes of the command's output left out; its last "
                  "65536 follow]") != std::string::npos;
  }
  EXPECT_TRUE(capped);
  // Runs of 2 ranks, a command of 1: bad input, named.
  const CommandResult one = Memprof("fit " + Runs("two-1", "two-2") +
                                    " --budget 1MiB --measure --command '" +
                                    kOwnLoop + "{micro_batch}'");
  EXPECT_EQ(one.exit_code, 2) << one.output;
  EXPECT_NE(one.output.find("ran 1 rank(s), but the runs are at 2: launch the "
                            "ranks in the command"),
            std::string::npos)
      << one.output;
}

}  // namespace
}  // namespace memprof
