#include "profiler/base/statistics.h"

#include <gtest/gtest.h>

namespace memprof {
namespace {

TEST(Median, OddCountIsTheMiddleValue) {
  EXPECT_EQ(Median({3.0}), 3.0);
  EXPECT_EQ(Median({5.0, 1.0, 3.0}), 3.0);
  EXPECT_EQ(Median({9.0, 2.0, 7.0, 2.0, 100.0}), 7.0);
}

TEST(Median, EvenCountIsTheMeanOfTheTwoMiddleValues) {
  EXPECT_EQ(Median({1.0, 2.0}), 1.5);
  EXPECT_EQ(Median({4.0, 1.0, 3.0, 2.0}), 2.5);
  EXPECT_DOUBLE_EQ(Median({0.010, 0.030, 0.020, 0.500}), 0.025);
  EXPECT_EQ(Median({2.0, 2.0, 2.0, 8.0}), 2.0);
}

TEST(Median, NoValuesIsZero) { EXPECT_EQ(Median({}), 0.0); }

TEST(Spread, IsTheExtremesOverTheMedian) {
  const Spread spread = SpreadOf({0.050, 0.682});
  EXPECT_EQ(spread.count, 2);
  EXPECT_EQ(spread.min, 0.050);
  EXPECT_EQ(spread.max, 0.682);
  EXPECT_DOUBLE_EQ(spread.median, 0.366);
  EXPECT_DOUBLE_EQ(spread.Relative(), 0.632 / 0.366);
  EXPECT_EQ(SpreadOf({2.0, 2.0, 2.0}).Relative(), 0.0);
  EXPECT_EQ(SpreadOf({}).count, 0);
  EXPECT_EQ(SpreadOf({}).Relative(), 0.0) << "no division by a zero median";
}

}  // namespace
}  // namespace memprof
