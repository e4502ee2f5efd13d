#include "profiler/base/cpu_threads.h"

#include <algorithm>
#include <cstdlib>
#include <thread>

#include <gtest/gtest.h>

namespace memprof {
namespace {

class CpuThreadsTest : public ::testing::Test {
 protected:
  void SetUp() override { Clear(); }
  void TearDown() override { Clear(); }
  static void Clear() {
    ::unsetenv("OMP_NUM_THREADS");
    ::unsetenv("MKL_NUM_THREADS");
  }
  const int cores =
      static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
};

TEST_F(CpuThreadsTest, UnsetSharesTheCoresBetweenTheRanks) {
  EXPECT_EQ(CpuThreadsPerRank(1), cores);
  EXPECT_EQ(CpuThreadsPerRank(2), std::max(1, cores / 2));
  EXPECT_EQ(CpuThreadsPerRank(cores * 4), 1);  // at least one
}

TEST_F(CpuThreadsTest, ReadsOmpNumThreadsAndMklNumThreadsFirst) {
  ::setenv("OMP_NUM_THREADS", "1", 1);
  EXPECT_EQ(CpuThreadsPerRank(1), 1);
  ::setenv("OMP_NUM_THREADS", "1,1", 1);  // nested levels: the outermost
  EXPECT_EQ(CpuThreadsPerRank(1), 1);
  ::setenv("MKL_NUM_THREADS", "1", 1);
  ::setenv("OMP_NUM_THREADS", "0", 1);
  EXPECT_EQ(CpuThreadsPerRank(8), 1);
}

TEST_F(CpuThreadsTest, AValueThatIsNoPositiveCountMeansEveryCore) {
  for (const char* value : {"0", "-2", "four", "", "2x"}) {
    ::setenv("OMP_NUM_THREADS", value, 1);
    EXPECT_EQ(CpuThreadsPerRank(4), cores) << value;
  }
  // More than the cores: LibTorch grants no more than its default.
  ::setenv("OMP_NUM_THREADS", std::to_string(cores + 1).c_str(), 1);
  EXPECT_EQ(CpuThreadsPerRank(1), cores);
}

}  // namespace
}  // namespace memprof
