// A run's blocks replayed through the CUDA caching allocator's model, in
// seq order whatever order they are listed in.
#include "profiler/capture/cuda_replay.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "tests/capture/lifetime_block.h"

namespace memprof {
namespace {

constexpr int64_t kMiB = 1 << 20;

// The blocks, written to a capture, replayed by the analysis' sink.
CudaReplay ReplayOnCudaAllocator(const std::vector<Lifetime>& blocks) {
  int64_t end = 0;
  for (const Lifetime& b : blocks) {
    end = std::max(
        {end, b.alloc_seq + 1, b.free_seq == kLive ? 0 : b.free_seq + 1});
  }
  CudaReplaySink replay;
  Analyze(WriteCapture(blocks, {{0, Phase::kIdle, 0}}, 0, end), {}, {&replay});
  return replay.Result();
}
constexpr Category kA = Category::kActivations;

TEST(CudaReplay, AFreedBlockIsReusedAndTheSegmentStaysReserved) {
  // 5 MiB (seq 1-2), then 3 MiB (seq 3, live): listed out of order.
  const CudaReplay r = ReplayOnCudaAllocator(
      {Block(3, kLive, 3 * kMiB, kA), Block(1, 2, 5 * kMiB, kA)});
  EXPECT_EQ(r.at_allocated_peak.allocated, 5 * kMiB);
  EXPECT_EQ(r.peak_reserved, 20 * kMiB);
  EXPECT_EQ(r.segments, 1);
}

TEST(CudaReplay, BlocksLiveTogetherShareASegmentAndLeaveASplit) {
  const CudaReplay r = ReplayOnCudaAllocator(
      {Block(1, 4, 5 * kMiB, kA), Block(2, 3, 5 * kMiB, kA)});
  EXPECT_EQ(r.at_allocated_peak.allocated, 10 * kMiB);
  EXPECT_EQ(r.at_allocated_peak.reserved, 20 * kMiB);
  EXPECT_EQ(r.at_allocated_peak.inactive_split, 10 * kMiB);
  EXPECT_EQ(r.peak_reserved, 20 * kMiB);
}

TEST(CudaReplay, SmallBlocksRoundTo512AndShareTwoMiB) {
  std::vector<Lifetime> blocks;
  for (int i = 0; i < 1000; ++i) blocks.push_back(Block(i, kLive, 1000, kA));
  const CudaReplay r = ReplayOnCudaAllocator(blocks);
  EXPECT_EQ(r.at_allocated_peak.requested, 1000 * 1000);
  EXPECT_EQ(r.at_allocated_peak.allocated, 1000 * 1024);
  EXPECT_EQ(r.peak_reserved, 2 * kMiB);
  EXPECT_EQ(r.segments, 1);
}

}  // namespace
}  // namespace memprof
