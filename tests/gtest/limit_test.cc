// <memprof/gtest.h> tested as GoogleTest tests its own assertions: the
// child binary (tests/gtest/limit_child.cc, built with memprof::gtest_main)
// runs one test at a time, and its exit code and output are checked: the
// failure's text and figures, a leak named, nothing printed on success,
// the same figures at every repetition beside a CPU hog.
#include <gtest/gtest.h>

#include <atomic>
#include <regex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/run_command.h"
#include "tests/text_file.h"

namespace memprof {
namespace {

CommandResult RunChild(const std::string& args) {
  return RunCommand(std::string(MEMPROF_GTEST_CHILD) + " " + args);
}

// The output matches `pattern` (ECMAScript) somewhere.
bool Has(const std::string& output, const std::string& pattern) {
  return std::regex_search(output, std::regex(pattern));
}

// Each failure message memprof printed, from "memprof:" to its remedy.
std::vector<std::string> Messages(const std::string& output) {
  std::vector<std::string> messages;
  size_t from = 0;
  while ((from = output.find("memprof: ", from)) != std::string::npos) {
    const size_t end = output.find("What to do:", from);
    if (end == std::string::npos) break;
    const size_t line_end = output.find('\n', end);
    messages.push_back(output.substr(from, line_end - from));
    from = line_end;
  }
  return messages;
}

// Two threads spinning while it lives: the child competes for the cores.
class CpuHog {
 public:
  CpuHog() {
    for (int i = 0; i < 2; ++i) {
      threads_.emplace_back([this] {
        volatile uint64_t n = 0;
        while (!stop_.load(std::memory_order_relaxed)) n = n + 1;
      });
    }
  }
  ~CpuHog() {
    stop_ = true;
    for (std::thread& t : threads_) t.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

TEST(MemoryLimitTest, CrossingTheLimitFailsWithThePeakItsBlocksAndTheRemedy) {
  const CommandResult r = RunChild("--gtest_filter=Child.TwoMiBOverOneMiB");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  // At the scope's line, with the limit, the peak (two 2 MiB tensors),
  // the breakdown and the blocks, in its named scope.
  EXPECT_TRUE(Has(r.output, R"(limit_child\.cc:\d+: Failure)")) << r.output;
  EXPECT_TRUE(Has(r.output,
                  R"(memprof: the peak inside this MemoryLimit is over its )"
                  R"(limit by 3\.00 MiB \(3,145,728 B\))"))
      << r.output;
  EXPECT_TRUE(
      Has(r.output, R"(limit: 1\.00 MiB \(1,048,576 B\), all categories)"))
      << r.output;
  EXPECT_TRUE(
      Has(r.output, R"(peak:  4\.00 MiB \(4,194,304 B\), outside a step)"))
      << r.output;
  EXPECT_TRUE(Has(r.output, R"(temporaries +4\.00 MiB \(4,194,304 B\)\n)"))
      << r.output;
  EXPECT_TRUE(Has(r.output,
                  R"((2\.00 MiB \(2,097,152 B\) +temporaries +buffer +)"
                  R"(outside a step\n *){2})"))
      << r.output;
  EXPECT_TRUE(Has(r.output, R"(What to do: make the code under test hold )"
                            R"(less at once)"))
      << r.output;
  EXPECT_EQ(Messages(r.output).size(), 1u) << r.output;
}

TEST(MemoryLimitTest, ACategoryOverItsLimitIsNamedWithItsBlocks) {
  const CommandResult r =
      RunChild("--gtest_filter=Child.ActivationsOverTheirLimit");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(Has(r.output,
                  "memprof: activations inside this MemoryLimit "
                  "went over their limit by "))
      << r.output;
  EXPECT_TRUE(Has(r.output, R"(limit: 16\.0 KiB \(16,384 B\), activations)"))
      << r.output;
  // The hidden layer's output, 32 x 256 floats, kept for backward.
  EXPECT_TRUE(Has(r.output, R"(32\.0 KiB \(32,768 B\) +activations +net +)"
                            R"(forward, step 1)"))
      << r.output;
  EXPECT_TRUE(Has(r.output, "What to do: what forward keeps for backward"))
      << r.output;
  // The limit on all categories held: only the category's message.
  EXPECT_EQ(Messages(r.output).size(), 1u) << r.output;
}

TEST(MemoryLimitTest, ALeakIsCaughtAndNamed) {
  const CommandResult r = RunChild("--gtest_filter=Child.KeepsOneMiBInACache");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(Has(r.output,
                  R"(memprof: 1 block allocated inside this LeakCheck, )"
                  R"(1\.00 MiB \(1,048,576 B\), still live at its end and )"
                  R"(owned by nothing tracked)"))
      << r.output;
  EXPECT_TRUE(Has(r.output, R"(1\.00 MiB \(1,048,576 B\) +unattributed +)"
                            R"(cache\.fill +outside a step)"))
      << r.output;
  EXPECT_TRUE(Has(r.output, "What to do: let them be freed before the scope"))
      << r.output;
}

TEST(MemoryLimitTest, PassingTestsPrintNothingOfMemprof) {
  const CommandResult r = RunChild(
      "--gtest_filter=Child.StepUnderItsLimits:Child.TrackedModelIsNoLeak:"
      "Child.NoTensor");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Has(r.output, R"(\[  PASSED  \] 3 tests)")) << r.output;
  EXPECT_EQ(r.output.find("memprof"), std::string::npos) << r.output;
}

TEST(MemoryLimitTest, SameFiguresAtEveryRepetitionBesideACpuHog) {
  CpuHog hog;
  const CommandResult pass =
      RunChild("--gtest_filter=Child.StepUnderItsLimits --gtest_repeat=20");
  EXPECT_EQ(pass.exit_code, 0) << pass.output;
  size_t passed = 0;
  for (size_t at = 0;
       (at = pass.output.find("[       OK ] Child.", at)) != std::string::npos;
       ++at) {
    ++passed;
  }
  EXPECT_EQ(passed, 20u) << pass.output;
  EXPECT_EQ(pass.output.find("memprof"), std::string::npos) << pass.output;

  const CommandResult fail = RunChild(
      "--gtest_filter=Child.ActivationsOverTheirLimit:Child.TwoMiBOverOneMiB "
      "--gtest_repeat=20");
  EXPECT_EQ(fail.exit_code, 1) << fail.output;
  const std::vector<std::string> messages = Messages(fail.output);
  ASSERT_EQ(messages.size(), 40u) << fail.output;
  for (size_t i = 2; i < messages.size(); ++i) {
    EXPECT_EQ(messages[i], messages[i % 2]) << "repetition " << i / 2 + 1;
  }
}

TEST(MemoryLimitTest, FatalOnRequest) {
  const CommandResult r = RunChild("--gtest_filter=Child.FatalOverTheLimit");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(Has(r.output, "fatal failure recorded: yes")) << r.output;
  EXPECT_EQ(Messages(r.output).size(), 1u) << r.output;
}

// The guide's main of one's own: the hook first, the same failure.
TEST(MemoryLimitTest, AMainOfOnesOwnInstallsTheHookFirst) {
  const CommandResult r = RunCommand(std::string(MEMPROF_GTEST_OWN_MAIN_CHILD) +
                                     " --gtest_filter=Child.TwoMiBOverOneMiB");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(
      Has(r.output, R"(peak:  4\.00 MiB \(4,194,304 B\), outside a step)"))
      << r.output;
  const std::string guide =
      ReadFile(std::string(MEMPROF_SOURCE_DIR) + "/docs/test-limits.md");
  const std::string main =
      ReadFile(std::string(MEMPROF_SOURCE_DIR) + "/tests/gtest/own_main.cc");
  EXPECT_NE(guide.find("```c++\n" + main + "```\n"), std::string::npos)
      << "docs/test-limits.md does not show tests/gtest/own_main.cc as it is";
}

TEST(MemoryLimitTest, MisuseNamesTheRemedy) {
  const std::pair<const char*, const char*> cases[] = {
      {"NotASize", R"("64 bananas" is not a size; write it as "64MiB")"},
      // Note [Tracked before the session]: a model made before the limit
      // is in none of its figures, so tracking it is refused, not counted
      // as 0.
      {"ModelMadeBeforeTheLimit",
       "'weight' was allocated before the session began.*inside the "
       "MemoryLimit's or LeakCheck's scope"},
      {"ACategoryLimitedTwice",
       "MemoryLimit::Category\\(\"activations\"\\) is given twice; give "
       "each category one limit"},
      {"TwoAtOnce",
       "a memprof session is already open in this process .*call "
       "NoLeaks\\(\\) on the MemoryLimit"},
  };
  for (const auto& [test, pattern] : cases) {
    const CommandResult r =
        RunChild(std::string("--gtest_filter=Child.") + test);
    EXPECT_EQ(r.exit_code, 1) << test << ": " << r.output;
    EXPECT_TRUE(Has(r.output, pattern)) << test << ": " << r.output;
  }
}

}  // namespace
}  // namespace memprof
