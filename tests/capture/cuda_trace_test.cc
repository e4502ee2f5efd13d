// The CUDA backend's translation (Note [CUDA trace translation]) driven by
// synthetic TraceEntry sequences, as the caching allocator would send them:
// no GPU. Categories come from the same tracker and attribution as on CPU;
// the allocator rows from the mirror, all to the byte.
#include "profiler/capture/cuda_trace.h"

#include <gtest/gtest.h>

#include "tests/capture/lifetime_block.h"

namespace memprof {
namespace {

using Entry = c10::CachingDeviceAllocator::TraceEntry;
constexpr int64_t kMiB = 1 << 20;

// Device addresses far from any host block, one region per test.
uint64_t Region(int test) { return (uint64_t{0x7e00} + test) << 32; }

Entry Make(Entry::Action action, uint64_t address, int64_t bytes) {
  return Entry(action, /*device=*/0, address, static_cast<size_t>(bytes),
               /*stream=*/nullptr, /*mempool=*/{0, 0}, /*time=*/0);
}

class CudaTraceTest : public ::testing::Test {
 protected:
  void Send(Entry::Action action, uint64_t address, int64_t bytes = 0) {
    trace.Apply(Make(action, address, bytes));
  }
  MemoryTracker& tracker = MemoryTracker::Get();
  CudaTrace trace{tracker};
};

TEST_F(CudaTraceTest, ARequestIsRecordedAtItsRoundedSizeInASegment) {
  const uint64_t segment = Region(1);
  const int64_t before = tracker.LiveBytes();
  Send(Entry::SEGMENT_ALLOC, segment, 2 * kMiB);
  Send(Entry::ALLOC, segment, 1);
  EXPECT_EQ(tracker.LiveBytes(), before + 512);
  const CudaAllocatorFigures now = trace.Now();
  EXPECT_EQ(now.requested, 1);
  EXPECT_EQ(now.allocated, 512);
  EXPECT_EQ(now.reserved, 2 * kMiB);
  EXPECT_EQ(now.inactive_split, 2 * kMiB - 512);
  Send(Entry::FREE_REQUESTED, segment);
  Send(Entry::FREE_COMPLETED, segment);
  EXPECT_EQ(tracker.LiveBytes(), before);
  EXPECT_EQ(trace.Now().allocated, 0);
  EXPECT_EQ(trace.Now().reserved, 2 * kMiB);  // segments stay reserved
  EXPECT_EQ(trace.Now().inactive_split, 0);   // one whole free segment
  EXPECT_EQ(trace.mismatches(), 0);
}

TEST_F(CudaTraceTest, LargeBlocksSplitOnlyAboveOneMiBLeft) {
  const uint64_t a = Region(2), b = Region(3);
  Send(Entry::SEGMENT_ALLOC, a, 20 * kMiB);
  Send(Entry::ALLOC, a, 5 * kMiB);  // 15 MiB left: split
  Send(Entry::SEGMENT_ALLOC, b, 16 * kMiB);
  Send(Entry::ALLOC, b, 15 * kMiB);  // 1 MiB left: the whole 16 MiB
  EXPECT_EQ(trace.Now().allocated, 21 * kMiB);
  EXPECT_EQ(trace.Now().requested, 20 * kMiB);
  EXPECT_EQ(trace.Now().reserved, 36 * kMiB);
  EXPECT_EQ(trace.Now().inactive_split, 15 * kMiB);
  // The free 15 MiB after the first block serves a later request there.
  Send(Entry::ALLOC, a + 5 * kMiB, 3 * kMiB);
  EXPECT_EQ(trace.Now().allocated, 24 * kMiB);
  EXPECT_EQ(trace.Now().inactive_split, 12 * kMiB);
  EXPECT_EQ(trace.mismatches(), 0);
  for (uint64_t block : {a, a + 5 * kMiB, b}) {
    Send(Entry::FREE_REQUESTED, block);
    Send(Entry::FREE_COMPLETED, block);
  }
  EXPECT_EQ(trace.Now().allocated, 0);
  EXPECT_EQ(trace.AtAllocatedPeak().allocated, 24 * kMiB);
  EXPECT_EQ(trace.PeakReserved(), 36 * kMiB);
}

// A block used on another stream is freed in two steps: the allocated
// bytes (and the tracker) drop at the request, the block is reusable only
// once the free completes.
TEST_F(CudaTraceTest, FreeRequestedComesBeforeFreeCompleted) {
  const uint64_t segment = Region(4);
  Send(Entry::SEGMENT_ALLOC, segment, 2 * kMiB);
  Send(Entry::ALLOC, segment, 4096);
  const int64_t live = tracker.LiveBytes();
  Send(Entry::FREE_REQUESTED, segment);
  EXPECT_EQ(tracker.LiveBytes(), live - 4096);
  EXPECT_EQ(trace.Now().allocated, 0);
  EXPECT_EQ(trace.mismatches(), 0);
  Send(Entry::ALLOC, segment, 4096);  // not free yet: the mirror objects
  EXPECT_EQ(trace.mismatches(), 1);
  EXPECT_NE(trace.first_mismatch(), "");
  Send(Entry::FREE_COMPLETED, segment);
  Send(Entry::ALLOC, segment, 4096);  // now it is
  EXPECT_EQ(trace.mismatches(), 1);
  EXPECT_EQ(trace.Now().allocated, 4096);
  Send(Entry::FREE_REQUESTED, segment);
  Send(Entry::FREE_COMPLETED, segment);
  Send(Entry::SEGMENT_FREE, segment);
  EXPECT_EQ(trace.Now().reserved, 0);
}

TEST_F(CudaTraceTest, OutOfMemoryKeepsTheRequestAndTheFiguresThen) {
  const uint64_t segment = Region(5);
  Send(Entry::SEGMENT_ALLOC, segment, 20 * kMiB);
  Send(Entry::ALLOC, segment, 8 * kMiB);
  Send(Entry::OOM, /*free bytes=*/3 * kMiB, /*requested=*/64 * kMiB);
  const CudaOutOfMemory oom = trace.out_of_memory();
  EXPECT_TRUE(oom.happened);
  EXPECT_EQ(oom.requested_bytes, 64 * kMiB);
  EXPECT_EQ(oom.device_free_bytes, 3 * kMiB);
  EXPECT_EQ(oom.figures.allocated, 8 * kMiB);
  EXPECT_EQ(oom.figures.reserved, 20 * kMiB);
  Send(Entry::FREE_REQUESTED, segment);
  Send(Entry::FREE_COMPLETED, segment);
}

TEST_F(CudaTraceTest, ExpandableSegmentsAreAMismatchNotAGuess) {
  Send(Entry::SEGMENT_MAP, Region(6), 2 * kMiB);
  EXPECT_EQ(trace.mismatches(), 1);
  EXPECT_NE(trace.first_mismatch().find("expandable"), std::string::npos);
}

// The same attribution as on CPU: ownership by the block's address, then
// the phase rule, on the rounded requests (Note [Rounded categories]).
TEST_F(CudaTraceTest, CategoriesComeFromTheTrackerAtTheRoundedRequest) {
  const uint64_t segment = Region(7);
  tracker.BeginSession();
  Send(Entry::SEGMENT_ALLOC, segment, 20 * kMiB);
  Send(Entry::ALLOC, segment, 2 * kMiB + 100);  // a weight
  const int64_t forward = tracker.SetPhase(Phase::kForward, 1);
  Send(Entry::ALLOC, segment + 2 * kMiB + 512, 3 * kMiB);  // an activation
  EXPECT_EQ(
      tracker.Resolve(reinterpret_cast<void*>(segment), Category::kWeights),
      ResolveResult::kResolved);
  EXPECT_EQ(tracker.ResolvePendingSince(forward, Category::kActivations),
            3 * kMiB);
  for (uint64_t block : {segment, segment + 2 * kMiB + 512}) {
    Send(Entry::FREE_REQUESTED, block);
    Send(Entry::FREE_COMPLETED, block);
  }
  const Capture capture = tracker.EndSession();
  ASSERT_EQ(LifetimesOf(capture).size(), 2u);
  for (const Lifetime& life : LifetimesOf(capture)) {
    if (life.address == segment) {
      EXPECT_EQ(life.category, Category::kWeights);
      EXPECT_EQ(life.bytes, 2 * kMiB + 512);
    } else {
      EXPECT_EQ(life.category, Category::kActivations);
      EXPECT_EQ(life.bytes, 3 * kMiB);
    }
  }
  EXPECT_EQ(trace.mismatches(), 0);
}

// A block the allocator does not split holds more than its request: the
// mirror's allocated bytes count the whole block, the category the rounded
// request.
TEST_F(CudaTraceTest, AnUnsplitBlockCountsItsRequestInTheCategory) {
  const uint64_t segment = Region(8);
  const int64_t before = tracker.LiveBytes();
  Send(Entry::SEGMENT_ALLOC, segment, 16 * kMiB);
  Send(Entry::ALLOC, segment, 15 * kMiB + 1);  // 1 MiB - 512 left: no split
  EXPECT_EQ(tracker.LiveBytes(), before + 15 * kMiB + 512);
  EXPECT_EQ(trace.Now().allocated, 16 * kMiB);
  EXPECT_EQ(trace.Now().requested, 15 * kMiB + 1);
  Send(Entry::FREE_REQUESTED, segment);
  Send(Entry::FREE_COMPLETED, segment);
  EXPECT_EQ(tracker.LiveBytes(), before);
}

// Under a memory fraction the allocator's OOM entry is the tracker's
// refusal: the session records it as the CPU memory limit's.
TEST_F(CudaTraceTest, OutOfMemoryIsTheTrackersRefusal) {
  const uint64_t segment = Region(9);
  tracker.BeginSession();
  trace.SetLimit(24 * kMiB);
  Send(Entry::SEGMENT_ALLOC, segment, 20 * kMiB);
  Send(Entry::ALLOC, segment, 8 * kMiB);
  tracker.SetPhase(Phase::kBackward, 2);
  Send(Entry::OOM, /*free bytes=*/kMiB, /*requested=*/16 * kMiB);
  const OutOfMemory refused = tracker.out_of_memory();
  EXPECT_GE(refused.seq, 0);
  EXPECT_EQ(refused.requested_bytes, 16 * kMiB);
  EXPECT_EQ(refused.live_bytes, 8 * kMiB);
  EXPECT_EQ(refused.limit_bytes, 24 * kMiB);
  EXPECT_EQ(refused.phase, Phase::kBackward);
  EXPECT_EQ(refused.step, 2);
  Send(Entry::FREE_REQUESTED, segment);
  Send(Entry::FREE_COMPLETED, segment);
  tracker.EndSession();
}

TEST_F(CudaTraceTest, ResetPeaksStartsTheSteadyState) {
  const uint64_t segment = Region(10);
  Send(Entry::SEGMENT_ALLOC, segment, 20 * kMiB);
  Send(Entry::ALLOC, segment, 8 * kMiB);
  Send(Entry::FREE_REQUESTED, segment);
  Send(Entry::FREE_COMPLETED, segment);
  trace.ResetPeaks();
  Send(Entry::ALLOC, segment, 2 * kMiB);
  EXPECT_EQ(trace.AtAllocatedPeak().allocated, 2 * kMiB);
  EXPECT_EQ(trace.PeakReserved(), 20 * kMiB);
  Send(Entry::FREE_REQUESTED, segment);
  Send(Entry::FREE_COMPLETED, segment);
}

}  // namespace
}  // namespace memprof
