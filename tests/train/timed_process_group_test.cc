// Note [Communication time]: the union of all-reduce intervals in a window.
#include "profiler/train/timed_process_group.h"

#include <gtest/gtest.h>

#include <thread>

namespace memprof {
namespace {

using std::chrono::milliseconds;

TEST(CommIntervals, OverlapsCountOnceAndTheWindowClips) {
  const SteadyTime t0 = std::chrono::steady_clock::now();
  CommIntervals comm;
  for (int i = 0; i < 3; ++i) comm.Issued();
  comm.Add(t0 + milliseconds(10), t0 + milliseconds(30));
  comm.Add(t0 + milliseconds(20), t0 + milliseconds(40));  // overlaps
  comm.Add(t0 + milliseconds(60), t0 + milliseconds(70));
  EXPECT_NEAR(comm.SecondsBetween(t0, t0 + milliseconds(100)), 0.040, 1e-9);
  EXPECT_NEAR(comm.SecondsBetween(t0 + milliseconds(25), t0 + milliseconds(65)),
              0.020, 1e-9);
  EXPECT_EQ(comm.SecondsBetween(t0 + milliseconds(45), t0 + milliseconds(55)),
            0.0);
}

TEST(CommIntervals, WaitsForAnIntervalStillBeingAdded) {
  const SteadyTime t0 = std::chrono::steady_clock::now();
  CommIntervals comm;
  comm.Issued();
  // The future's callback runs after its waiter woke up.
  std::thread late([&] {
    std::this_thread::sleep_for(milliseconds(50));
    comm.Add(t0, t0 + milliseconds(5));
  });
  EXPECT_NEAR(comm.SecondsBetween(t0, t0 + milliseconds(10)), 0.005, 1e-9);
  late.join();
}

}  // namespace
}  // namespace memprof
