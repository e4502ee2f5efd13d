#include "profiler/base/cuda_allocator_model.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

namespace memprof {
namespace {

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * 1024;
// Mirror-mode segments start here: 0x7f0000000000.
constexpr uint64_t kBase = uint64_t{0x7f} << 40;

// The four figures in CudaAllocatorFigures' order, for one EXPECT_EQ:
// {requested, allocated, reserved, inactive_split}.
std::tuple<int64_t, int64_t, int64_t, int64_t> Figures(
    const CudaAllocatorFigures& f) {
  return {f.requested, f.allocated, f.reserved, f.inactive_split};
}

// The message of the std::logic_error `call` throws; fails the test when
// it throws none.
std::string LogicErrorOf(const std::function<void()>& call) {
  try {
    call();
  } catch (const std::logic_error& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted";
  return "";
}

TEST(CudaAllocatorModel, RoundsAndSizesSegmentsAsTheAllocator) {
  EXPECT_EQ(CudaRoundSize(1), 512);
  EXPECT_EQ(CudaRoundSize(511), 512);
  EXPECT_EQ(CudaRoundSize(512), 512);
  EXPECT_EQ(CudaRoundSize(513), 1024);
  EXPECT_EQ(CudaRoundSize(1000), 1024);
  EXPECT_TRUE(CudaSmallPool(kMiB));
  EXPECT_FALSE(CudaSmallPool(kMiB + 512));
  EXPECT_EQ(CudaSegmentSize(512), 2 * kMiB);
  EXPECT_EQ(CudaSegmentSize(kMiB), 2 * kMiB);
  EXPECT_EQ(CudaSegmentSize(kMiB + 512), 20 * kMiB);
  EXPECT_EQ(CudaSegmentSize(10 * kMiB - 512), 20 * kMiB);
  EXPECT_EQ(CudaSegmentSize(10 * kMiB), 10 * kMiB);
  EXPECT_EQ(CudaSegmentSize(10 * kMiB + 512), 12 * kMiB);
  EXPECT_EQ(CudaSegmentSize(15 * kMiB), 16 * kMiB);
  EXPECT_EQ(CudaSegmentSize(16 * kMiB), 16 * kMiB);
}

TEST(CudaAllocatorModel, OneByteReservesASmallSegmentAndAllocates512Bytes) {
  CudaAllocatorModel m;
  const uint64_t a = m.Malloc(1);
  EXPECT_EQ(m.BlockSize(a), 512);
  EXPECT_EQ(m.segment_count(), 1);
  EXPECT_EQ(Figures(m.now()), Figures({1, 512, 2 * kMiB, 2 * kMiB - 512}));
}

TEST(CudaAllocatorModel, FiveMiBSplitsATwentyMiBSegment) {
  CudaAllocatorModel m;
  const uint64_t a = m.Malloc(5 * kMiB);
  EXPECT_EQ(m.BlockSize(a), 5 * kMiB);
  EXPECT_EQ(Figures(m.now()),
            Figures({5 * kMiB, 5 * kMiB, 20 * kMiB, 15 * kMiB}));
  // The remainder serves the next request, right after the first.
  const uint64_t b = m.Malloc(5 * kMiB);
  EXPECT_EQ(b, a + 5 * kMiB);
  EXPECT_EQ(m.segment_count(), 1);
  EXPECT_EQ(Figures(m.now()),
            Figures({10 * kMiB, 10 * kMiB, 20 * kMiB, 10 * kMiB}));
}

TEST(CudaAllocatorModel, FifteenMiBTakesAllOfASixteenMiBSegment) {
  CudaAllocatorModel m;
  const uint64_t a = m.Malloc(15 * kMiB);
  // The remaining 1 MiB is not more than 1 MiB: no split.
  EXPECT_EQ(m.BlockSize(a), 16 * kMiB);
  EXPECT_EQ(Figures(m.now()), Figures({15 * kMiB, 16 * kMiB, 16 * kMiB, 0}));

  // 512 bytes less leaves 1 MiB + 512 B, which is split off.
  CudaAllocatorModel n;
  const uint64_t b = n.Malloc(15 * kMiB - 512);
  EXPECT_EQ(n.BlockSize(b), 15 * kMiB - 512);
  EXPECT_EQ(Figures(n.now()),
            Figures({15 * kMiB - 512, 15 * kMiB - 512, 16 * kMiB, kMiB + 512}));
}

TEST(CudaAllocatorModel, AFreedBlockSplitsForASmallerRequestAndMergesBack) {
  CudaAllocatorModel m;
  const uint64_t a = m.Malloc(5 * kMiB);
  m.Free(a);
  // 5 MiB merged with the 15 MiB after it: the segment is whole again.
  EXPECT_EQ(Figures(m.now()), Figures({0, 0, 20 * kMiB, 0}));

  const uint64_t b = m.Malloc(3 * kMiB);
  EXPECT_EQ(b, a);
  EXPECT_EQ(m.BlockSize(b), 3 * kMiB);
  EXPECT_EQ(Figures(m.now()),
            Figures({3 * kMiB, 3 * kMiB, 20 * kMiB, 17 * kMiB}));
  m.Free(b);
  EXPECT_EQ(Figures(m.now()), Figures({0, 0, 20 * kMiB, 0}));

  // A 14.5 MiB request takes all of a 15 MiB remainder (0.5 MiB left is
  // not split off), so allocated is the whole segment.
  EXPECT_EQ(m.Malloc(5 * kMiB), a);
  const uint64_t c = m.Malloc(14 * kMiB + 512 * kKiB);
  EXPECT_EQ(c, a + 5 * kMiB);
  EXPECT_EQ(m.BlockSize(c), 15 * kMiB);
  EXPECT_EQ(m.segment_count(), 1);
  EXPECT_EQ(Figures(m.now()),
            Figures({19 * kMiB + 512 * kKiB, 20 * kMiB, 20 * kMiB, 0}));
}

TEST(CudaAllocatorModel, SmallRequestsShareASmallSegment) {
  CudaAllocatorModel m;
  std::vector<uint64_t> blocks;
  for (int i = 0; i < 1000; ++i) blocks.push_back(m.Malloc(kKiB));
  EXPECT_EQ(blocks.back(), blocks.front() + 999 * kKiB);
  EXPECT_EQ(m.segment_count(), 1);
  EXPECT_EQ(Figures(m.now()),
            Figures({1000 * kKiB, 1000 * kKiB, 2 * kMiB, 1048 * kKiB}));

  // 1 MiB is still small, and fits in the 1048 KiB left (24 KiB split off).
  EXPECT_EQ(m.Malloc(kMiB), blocks.front() + 1000 * kKiB);
  EXPECT_EQ(Figures(m.now()),
            Figures({2024 * kKiB, 2024 * kKiB, 2 * kMiB, 24 * kKiB}));

  // One byte more is large: a 20 MiB segment of its own.
  const uint64_t large = m.Malloc(kMiB + 1);
  EXPECT_EQ(m.BlockSize(large), kMiB + 512);
  EXPECT_EQ(m.segment_count(), 2);
  EXPECT_EQ(Figures(m.now()),
            Figures({3048 * kKiB + 1, 3048 * kKiB + 512, 22 * kMiB,
                     24 * kKiB + 19 * kMiB - 512}));
}

TEST(CudaAllocatorModel, SmallPoolSplitsOffRemaindersOf512Bytes) {
  CudaAllocatorModel m;
  m.SegmentAlloc(kBase, 2 * kMiB);
  EXPECT_EQ(m.Alloc(kBase, kMiB), kMiB);
  EXPECT_EQ(m.Alloc(kBase + kMiB, kMiB - 512), kMiB - 512);
  EXPECT_EQ(m.now().inactive_split, 512);
  EXPECT_EQ(m.Alloc(kBase + 2 * kMiB - 512, 1), 512);
  EXPECT_EQ(Figures(m.now()), Figures({2 * kMiB - 511, 2 * kMiB, 2 * kMiB, 0}));
}

TEST(CudaAllocatorModel, BestFitTakesTheSmallestBlockThenTheLowestAddress) {
  CudaAllocatorModel m;
  const uint64_t s14 = m.Malloc(14 * kMiB);  // segments of their own size
  const uint64_t s12 = m.Malloc(12 * kMiB);
  const uint64_t t12 = m.Malloc(12 * kMiB);
  ASSERT_LT(s14, s12);
  ASSERT_LT(s12, t12);
  m.Free(t12);
  m.Free(s14);
  m.Free(s12);
  // 11 MiB leaves 1 MiB of a 12 MiB block (not split), 3 MiB of 14 MiB.
  EXPECT_EQ(m.Malloc(11 * kMiB), s12);
  EXPECT_EQ(m.Malloc(11 * kMiB), t12);
  EXPECT_EQ(m.Malloc(11 * kMiB), s14);
  EXPECT_EQ(m.BlockSize(s12), 12 * kMiB);
  EXPECT_EQ(m.BlockSize(s14), 11 * kMiB);
  EXPECT_EQ(m.segment_count(), 3);
  EXPECT_EQ(Figures(m.now()),
            Figures({33 * kMiB, 35 * kMiB, 38 * kMiB, 3 * kMiB}));
}

TEST(CudaAllocatorModel, MirrorFollowsTheTraceAddresses) {
  CudaAllocatorModel m;
  m.SegmentAlloc(kBase, 20 * kMiB);
  EXPECT_EQ(Figures(m.now()), Figures({0, 0, 20 * kMiB, 0}));
  const uint64_t a = kBase;
  const uint64_t b = kBase + 5 * kMiB;
  EXPECT_EQ(m.Alloc(a, 5 * kMiB), 5 * kMiB);
  EXPECT_EQ(m.Alloc(b, 2 * kMiB), 2 * kMiB);
  EXPECT_EQ(Figures(m.now()),
            Figures({7 * kMiB, 7 * kMiB, 20 * kMiB, 13 * kMiB}));

  // a's free is requested (it was used on another stream): allocated drops,
  // the block is not free yet, and requested waits for the completion.
  m.FreeRequested(a);
  EXPECT_EQ(m.BlockSize(a), 0);
  EXPECT_EQ(Figures(m.now()),
            Figures({7 * kMiB, 2 * kMiB, 20 * kMiB, 13 * kMiB}));
  // b merges with the 13 MiB after it, not with a.
  m.Free(b);
  EXPECT_EQ(Figures(m.now()), Figures({5 * kMiB, 0, 20 * kMiB, 15 * kMiB}));
  EXPECT_THROW(m.Alloc(kBase + 7 * kMiB, 2 * kMiB), std::logic_error);
  EXPECT_THROW(m.SegmentFree(kBase), std::logic_error);

  m.FreeCompleted(a);
  EXPECT_EQ(Figures(m.now()), Figures({0, 0, 20 * kMiB, 0}));
  EXPECT_THROW(m.Alloc(b, 2 * kMiB), std::logic_error);
  m.SegmentFree(kBase);
  EXPECT_EQ(Figures(m.now()), Figures({0, 0, 0, 0}));
  EXPECT_EQ(m.segment_count(), 0);
  EXPECT_EQ(m.peak_reserved(), 20 * kMiB);
}

TEST(CudaAllocatorModel, MirrorRefusesImpossibleEventsNamingTheAddress) {
  CudaAllocatorModel m;
  m.SegmentAlloc(kBase, 2 * kMiB);
  ASSERT_EQ(m.Alloc(kBase, 1000), 1024);  // free block left at kBase + 1024

  // Inside the allocated block; the allocated block; no segment there.
  EXPECT_NE(
      LogicErrorOf([&] { m.Alloc(kBase + 512, 1000); }).find("0x7f0000000200"),
      std::string::npos);
  EXPECT_NE(LogicErrorOf([&] { m.Alloc(kBase, 1000); }).find("0x7f0000000000"),
            std::string::npos);
  EXPECT_NE(LogicErrorOf([&] {
              m.Alloc(kBase + 4 * kMiB, 1);
            }).find("0x7f0000400000"),
            std::string::npos);
  // A large request in a small segment; no request at all.
  EXPECT_NE(LogicErrorOf([&] {
              m.Alloc(kBase + 1024, kMiB + 1);
            }).find("0x7f0000000400"),
            std::string::npos);
  EXPECT_NE(
      LogicErrorOf([&] { m.Alloc(kBase + 1024, 0); }).find("0x7f0000000400"),
      std::string::npos);
  // Frees out of order: completion before request, request of a free block.
  EXPECT_NE(
      LogicErrorOf([&] { m.FreeCompleted(kBase); }).find("0x7f0000000000"),
      std::string::npos);
  EXPECT_NE(LogicErrorOf([&] {
              m.FreeRequested(kBase + 1024);
            }).find("0x7f0000000400"),
            std::string::npos);
  // A segment with a live block; a segment overlapping another.
  EXPECT_NE(LogicErrorOf([&] { m.SegmentFree(kBase); }).find("0x7f0000000000"),
            std::string::npos);
  EXPECT_NE(LogicErrorOf([&] {
              m.SegmentAlloc(kBase + kMiB, 2 * kMiB);
            }).find("0x7f0000100000"),
            std::string::npos);

  // Nothing refused changed the state.
  EXPECT_EQ(m.segment_count(), 1);
  EXPECT_EQ(Figures(m.now()), Figures({1000, 1024, 2 * kMiB, 2 * kMiB - 1024}));
}

TEST(CudaAllocatorModel, PredictModePlacesNewSegmentsPastMirroredOnes) {
  CudaAllocatorModel m;
  m.SegmentAlloc(kBase, 2 * kMiB);
  const uint64_t a = m.Malloc(5 * kMiB);
  EXPECT_GE(a, kBase + 2 * kMiB);
  EXPECT_EQ(m.segment_count(), 2);
  // The mirrored segment serves predicted small requests.
  EXPECT_EQ(m.Malloc(1), kBase);
}

TEST(CudaAllocatorModel, AtAllocatedPeakKeepsTheFiguresOfThePeak) {
  CudaAllocatorModel m;
  const uint64_t a = m.Malloc(8 * kMiB);
  m.Free(a);
  const uint64_t s = m.Malloc(kKiB);
  EXPECT_EQ(Figures(m.at_allocated_peak()),
            Figures({8 * kMiB, 8 * kMiB, 20 * kMiB, 12 * kMiB}));
  EXPECT_EQ(m.peak_reserved(), 22 * kMiB);

  // Allocated reaches 8 MiB again: the peak moves to this later moment.
  const uint64_t b = m.Malloc(8 * kMiB - kKiB);
  EXPECT_EQ(b, a);
  const CudaAllocatorFigures peak = {8 * kMiB, 8 * kMiB, 22 * kMiB, 14 * kMiB};
  EXPECT_EQ(Figures(m.at_allocated_peak()), Figures(peak));
  m.Free(b);
  m.Free(s);
  EXPECT_EQ(Figures(m.at_allocated_peak()), Figures(peak));
  EXPECT_EQ(Figures(m.now()), Figures({0, 0, 22 * kMiB, 0}));
}

TEST(CudaAllocatorModel, FreeingEverythingLeavesWholeSegments) {
  CudaAllocatorModel m;
  std::mt19937_64 random(7);
  std::uniform_int_distribution<int64_t> bytes(1, 24 * kMiB);
  std::vector<uint64_t> live;
  for (int i = 0; i < 20000; ++i) {
    if (live.empty() || random() % 3 != 0) {
      // Mostly small requests, as in training.
      const int64_t request =
          random() % 4 == 0 ? bytes(random) : bytes(random) % kMiB + 1;
      const uint64_t address = m.Malloc(request);
      EXPECT_GE(m.BlockSize(address), CudaRoundSize(request));
      live.push_back(address);
    } else {
      const size_t victim = random() % live.size();
      m.Free(live[victim]);
      live[victim] = live.back();
      live.pop_back();
    }
    ASSERT_LE(m.now().allocated + m.now().inactive_split, m.now().reserved);
  }
  const int64_t reserved = m.now().reserved;
  for (const uint64_t address : live) m.Free(address);
  EXPECT_EQ(Figures(m.now()), Figures({0, 0, reserved, 0}));
  EXPECT_EQ(m.peak_reserved(), reserved);
}

}  // namespace
}  // namespace memprof
