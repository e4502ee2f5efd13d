#include "profiler/base/rank_env.h"

#include <cstdlib>

#include <gtest/gtest.h>

#include "profiler/base/errors.h"

namespace memprof {
namespace {

class RankEnvTest : public ::testing::Test {
 protected:
  void SetUp() override { Clear(); }
  void TearDown() override { Clear(); }
  static void Clear() {
    for (const char* name :
         {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT",
          "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID",
          "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
          "OMPI_COMM_WORLD_LOCAL_RANK", "MEMPROF_LAUNCHED"}) {
      ::unsetenv(name);
    }
  }
  static std::string ErrorOf() {
    try {
      TopologyFromEnvironment();
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  }
};

TEST_F(RankEnvTest, NoVariablesMeansNoJob) {
  EXPECT_FALSE(TopologyFromEnvironment().has_value());
}

TEST_F(RankEnvTest, ReadsTorchrun) {
  ::setenv("RANK", "3", 1);
  ::setenv("WORLD_SIZE", "8", 1);
  ::setenv("LOCAL_RANK", "1", 1);
  ::setenv("MASTER_ADDR", "node0", 1);
  ::setenv("MASTER_PORT", "29500", 1);
  const auto t = TopologyFromEnvironment();
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->rank, 3);
  EXPECT_EQ(t->world_size, 8);
  EXPECT_EQ(t->local_rank, 1);
  EXPECT_EQ(t->master_addr, "node0");
  EXPECT_EQ(t->master_port, 29500);
  EXPECT_FALSE(t->launched_by_memprof);
}

TEST_F(RankEnvTest, ReadsSlurmAndOpenMpi) {
  ::setenv("MASTER_ADDR", "10.0.0.1", 1);
  ::setenv("MASTER_PORT", "1234", 1);
  ::setenv("SLURM_PROCID", "1", 1);
  ::setenv("SLURM_NTASKS", "2", 1);
  EXPECT_EQ(TopologyFromEnvironment()->rank, 1);
  ::unsetenv("SLURM_PROCID");
  ::unsetenv("SLURM_NTASKS");
  ::setenv("OMPI_COMM_WORLD_RANK", "0", 1);
  ::setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
  ::setenv("OMPI_COMM_WORLD_LOCAL_RANK", "0", 1);
  EXPECT_EQ(TopologyFromEnvironment()->world_size, 4);
}

TEST_F(RankEnvTest, IncompleteOrInconsistentIsBadInput) {
  ::setenv("RANK", "0", 1);
  EXPECT_NE(ErrorOf().find("WORLD_SIZE is not set"), std::string::npos);
  ::setenv("WORLD_SIZE", "2", 1);
  EXPECT_NE(ErrorOf().find("MASTER_ADDR"), std::string::npos);
  ::setenv("MASTER_ADDR", "127.0.0.1", 1);
  ::setenv("MASTER_PORT", "http", 1);
  EXPECT_NE(ErrorOf().find("MASTER_PORT='http'"), std::string::npos);
  ::setenv("MASTER_PORT", "5000", 1);
  ::setenv("RANK", "2", 1);
  EXPECT_NE(ErrorOf().find("not below WORLD_SIZE"), std::string::npos);
}

// A port past 65535 once wrapped to another (99999 became 34463).
TEST_F(RankEnvTest, APortOutsideTheTcpRangeIsRefused) {
  ::setenv("RANK", "0", 1);
  ::setenv("WORLD_SIZE", "2", 1);
  ::setenv("MASTER_ADDR", "127.0.0.1", 1);
  for (const char* port : {"99999", "65536", "0", "99999999999999999999"}) {
    ::setenv("MASTER_PORT", port, 1);
    EXPECT_EQ(ErrorOf(), std::string("environment variable MASTER_PORT='") +
                             port + "' is not an integer in [1, 65535]");
  }
  ::setenv("MASTER_PORT", "65535", 1);
  EXPECT_EQ(TopologyFromEnvironment()->master_port, 65535);
}

}  // namespace
}  // namespace memprof
