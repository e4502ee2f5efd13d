#include "profiler/human_bytes.h"

#include <gtest/gtest.h>

namespace memprof {
namespace {

TEST(HumanBytes, PicksBinaryUnitsWithThreeSignificantDigits) {
  EXPECT_EQ(HumanBytes(0), "0 B");
  EXPECT_EQ(HumanBytes(1023), "1023 B");
  EXPECT_EQ(HumanBytes(1024), "1.00 KiB");
  EXPECT_EQ(HumanBytes(1536), "1.50 KiB");
  EXPECT_EQ(HumanBytes(10 * 1024 * 1024 + 512 * 1024), "10.5 MiB");
  EXPECT_EQ(HumanBytes(int64_t{200} << 30), "200 GiB");
  EXPECT_EQ(HumanBytes(-2048), "-2.00 KiB");
}

TEST(HumanBytes, SignedShowsPlusForGrowth) {
  EXPECT_EQ(SignedBytes(4096), "+4.00 KiB");
  EXPECT_EQ(SignedBytes(-12), "-12 B");
  EXPECT_EQ(SignedBytes(0), "0 B");
}

}  // namespace
}  // namespace memprof
