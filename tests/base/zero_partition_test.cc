// The ZeRO-1 partition: greedy, largest parameter first, to the least
// loaded rank (Note [ZeRO-1 partition]).
#include "profiler/base/zero_partition.h"

#include <algorithm>

#include <gtest/gtest.h>

namespace memprof {
namespace {

TEST(ZeroPartition, LargestFirstToTheLeastLoadedRank) {
  // Largest first: 40 (#1) -> rank 0; 30 (#3) -> rank 1; 20 (#0) -> rank 1
  // (30 < 40); 10 (#2) -> rank 0 (40 < 50); 10 (#4) -> loads 50 / 50, a
  // tie: the lowest rank, 0.
  const std::vector<int> owners = PartitionParameters({20, 40, 10, 30, 10}, 2);
  EXPECT_EQ(owners, (std::vector<int>{1, 0, 0, 1, 0}));
  EXPECT_EQ(OwnedBytes({20, 40, 10, 30, 10}, owners, 2),
            (std::vector<int64_t>{60, 50}));
}

TEST(ZeroPartition, OneRankOwnsEverything) {
  EXPECT_EQ(PartitionParameters({5, 7, 1}, 1), (std::vector<int>{0, 0, 0}));
}

TEST(ZeroPartition, MoreRanksThanParametersLeavesSomeEmpty) {
  const std::vector<int64_t> bytes = {8, 4};
  const std::vector<int> owners = PartitionParameters(bytes, 4);
  EXPECT_EQ(owners, (std::vector<int>{0, 1}));
  EXPECT_EQ(OwnedBytes(bytes, owners, 4), (std::vector<int64_t>{8, 4, 0, 0}));
}

TEST(ZeroPartition, EveryParameterOnceAndTheGreedyBound) {
  std::vector<int64_t> bytes;
  for (int i = 0; i < 50; ++i) bytes.push_back((i * 7919) % 1000 + 1);
  for (int n : {1, 2, 3, 4, 8}) {
    const std::vector<int> owners = PartitionParameters(bytes, n);
    ASSERT_EQ(owners.size(), bytes.size());
    int64_t total = 0, largest = 0;
    for (size_t i = 0; i < bytes.size(); ++i) {
      ASSERT_GE(owners[i], 0);
      ASSERT_LT(owners[i], n);
      total += bytes[i];
      largest = std::max(largest, bytes[i]);
    }
    const std::vector<int64_t> owned = OwnedBytes(bytes, owners, n);
    int64_t sum = 0, most = 0;
    for (int64_t b : owned) sum += b, most = std::max(most, b);
    EXPECT_EQ(sum, total);
    // Greedy list scheduling: no rank above the mean plus one parameter.
    EXPECT_LE(most, (total + n - 1) / n + largest) << n << " ranks";
    EXPECT_EQ(PartitionParameters(bytes, n), owners) << "deterministic";
  }
}

// The rule as stated, every rank's load scanned for each parameter.
std::vector<int> ScanEveryRank(const std::vector<int64_t>& bytes, int n) {
  std::vector<size_t> order(bytes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return bytes[a] > bytes[b]; });
  std::vector<int64_t> load(static_cast<size_t>(n), 0);
  std::vector<int> owners(bytes.size());
  for (size_t i : order) {
    const auto least = std::min_element(load.begin(), load.end());
    owners[i] = static_cast<int>(least - load.begin());
    *least += bytes[i];
  }
  return owners;
}

// The partition keeps only the ranks given a parameter (time in the
// parameters, not the ranks) and still picks as the scan does: ties,
// zero-byte parameters and more ranks than parameters included.
TEST(ZeroPartition, SameOwnersAsScanningEveryRank) {
  std::vector<std::vector<int64_t>> cases = {
      {20, 40, 10, 30, 10}, {0, 0, 5, 0}, {7, 7, 7, 7, 7, 7, 7}, {}, {3}};
  for (int seed = 1; seed <= 20; ++seed) {
    std::vector<int64_t> bytes;
    for (int i = 0; i < 3 * seed; ++i) {
      bytes.push_back(((i + 1) * 7919 * seed) % (seed % 4 == 0 ? 3 : 97));
    }
    cases.push_back(bytes);
  }
  for (const std::vector<int64_t>& bytes : cases) {
    for (int n : {1, 2, 3, 5, 8, 64, 1000}) {
      EXPECT_EQ(PartitionParameters(bytes, n), ScanEveryRank(bytes, n))
          << bytes.size() << " parameters, " << n << " ranks";
    }
  }
  // 2^24 ranks, the most ddp.world_size takes: as quick as 2.
  EXPECT_EQ(PartitionParameters({8, 4, 4}, 1 << 24),
            (std::vector<int>{0, 1, 2}));
}

TEST(ZeroPartition, RefusesNoRanks) {
  EXPECT_THROW(PartitionParameters({1}, 0), std::invalid_argument);
}

}  // namespace
}  // namespace memprof
