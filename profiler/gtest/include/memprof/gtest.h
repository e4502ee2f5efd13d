// memprof in GoogleTest: memory limits and leak checks in a test.
//
//   #include <memprof/gtest.h>     // link memprof::gtest_main (or see below)
//
//   TEST(MyModel, StepStaysUnder2MiB) {
//     memprof::testing::MemoryLimit limit("2MiB");   // every category
//     limit.Category("activations", "512KiB");       // optional, per category
//     memprof::Session& session = limit.session();   // to Track and mark
//     Net net;
//     session.Track(*net);
//     ... the code under test ...
//   }                        // checked here; silent when within the limits
//
//   TEST(MyModel, StepLeaksNothing) {
//     memprof::testing::LeakCheck leaks;
//     ... the code under test ...
//   }
//
// The hook. memprof sees the blocks of LibTorch's CPU allocator once its
// hook is installed, which must happen before the program makes any tensor.
// memprof::gtest_main does it first thing in main, then runs the tests as
// GoogleTest's own main does. A test program with its own main calls
// memprof::testing::InstallHook() first thing in it, before
// ::testing::InitGoogleTest, and links memprof::gtest.
//
// What is measured. A MemoryLimit or a LeakCheck is a memprof::Session of
// its own, from its construction to the end of its scope (one at a time in
// a process). Its figures are the blocks allocated inside it, counted in
// bytes as LibTorch requested them, on every thread: what existed before
// it (a fixture's model, another test's leftovers) is in none of them, so
// the same test gives the same bytes at every run and repetition, whatever
// else the machine does. A test's tensors are destroyed before its limit
// when they are declared after it, as in the examples.
//
// Categories. Every block ends in one category, as in memprof's reports,
// from what the test tracks and marks through session():
//   - Track(model): its parameters and buffers `weights`, their .grad
//     `gradients`; Track(optimizer): its buffers `optimizer_state`;
//     TrackInputs(...) inside Inputs(): `inputs`. A model tracked here must
//     be made inside the scope (memprof refuses a tensor made before it).
//   - Inside Step() with Forward() and Backward() marks: what forward makes
//     and still holds at its end is `activations`.
//   - A block owned by nothing tracked and not kept as an activation:
//     `temporaries` when it is freed inside the scope, `unattributed` when
//     it is still live at its end. A test that tracks and marks nothing
//     gets its limit on all categories all the same: its blocks are
//     temporaries and, if still live at the end, unattributed.
//
// The checks, at the end of the scope (an exception leaving it skips
// them: the exception is the test's failure):
//   - the limit: the highest live bytes of all categories together inside
//     the scope, and each category's own highest live bytes for the
//     categories given to Category();
//   - the leak check (LeakCheck, or MemoryLimit::NoLeaks()): the blocks
//     allocated inside the scope, still live at its end, and owned by
//     nothing tracked (weights, gradients, optimizer_state, inputs and
//     ddp_buckets are owned; anything else is a leak).
// A failed check fails the test, nonfatally (as EXPECT_*) by default, or
// as a fatal failure (as ASSERT_* in a helper function) with
// Failure::kFatal: ASSERT_NO_FATAL_FAILURE and HasFatalFailure() see it.
// The failure names the scope's file and line, the limit and the peak, the
// bytes of each category at the peak, the largest blocks live then (bytes,
// category, the innermost named scope of session().Scope() open when each
// was allocated, and the phase and step; the hook does not record which
// operator allocated a block, so a Scope() around the code says where) and
// what to do. Nothing is printed when the checks pass.
//
// Misuse (a limit memprof cannot read, an unknown category or one limited
// twice, a second scope inside the first, tracking a model made before the
// scope) throws memprof::UsageError naming the remedy, which
// GoogleTest reports as the test's failure.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <memprof/memprof.h>

namespace memprof {
namespace testing {

// Installs memprof's allocator hook. For a test program with its own main:
// call it first, before any tensor is made. Idempotent.
void InstallHook();

// How a failed check fails the test.
enum class Failure {
  kNonfatal,  // as EXPECT_*: the test goes on
  kFatal,     // as ASSERT_* in a helper: a fatal failure of the test
};

class CheckedScope;  // the session and its checks (not for programs)

// A limit on the live bytes inside a scope. `limit` is a size such as
// "64MiB", "1.5 GiB" or "4096" (bytes): KiB, MiB, GiB and K, M, G are
// powers of 1024, KB, MB, GB powers of 1000.
class MemoryLimit {
 public:
  explicit MemoryLimit(const std::string& limit,
                       Failure failure = Failure::kNonfatal,
                       const char* file = __builtin_FILE(),
                       int line = __builtin_LINE());
  explicit MemoryLimit(int64_t limit_bytes,
                       Failure failure = Failure::kNonfatal,
                       const char* file = __builtin_FILE(),
                       int line = __builtin_LINE());
  // Checks, unless an exception is leaving the scope.
  ~MemoryLimit();
  MemoryLimit(const MemoryLimit&) = delete;
  MemoryLimit& operator=(const MemoryLimit&) = delete;

  // A limit on one category's own highest live bytes inside the scope
  // ("activations", "weights", ...: the names of memprof's reports); once
  // per category (a second limit on it: UsageError).
  MemoryLimit& Category(const std::string& category, const std::string& limit);
  MemoryLimit& Category(const std::string& category, int64_t limit_bytes);
  // Also checks for leaks, as a LeakCheck would.
  MemoryLimit& NoLeaks();

  // The scope's session: Track the model, mark the step's phases and
  // named scopes. It ends with the scope and writes no report.
  memprof::Session& session();

 private:
  std::unique_ptr<CheckedScope> scope_;
};

// Fails the test when blocks allocated inside the scope are still live at
// its end and owned by nothing tracked.
class LeakCheck {
 public:
  explicit LeakCheck(Failure failure = Failure::kNonfatal,
                     const char* file = __builtin_FILE(),
                     int line = __builtin_LINE());
  ~LeakCheck();
  LeakCheck(const LeakCheck&) = delete;
  LeakCheck& operator=(const LeakCheck&) = delete;

  memprof::Session& session();

 private:
  std::unique_ptr<CheckedScope> scope_;
};

}  // namespace testing
}  // namespace memprof
