// The tracker on fake block addresses: no allocator, no tensors.
#include "profiler/capture/memory_tracker.h"
#include "profiler/base/errors.h"
#include "profiler/capture/lifetime_analysis.h"
#include "tests/capture/lifetime_block.h"
#include "tests/temp_dir.h"
#include "tests/text_file.h"

#include <algorithm>
#include <thread>
#include <vector>

#include <c10/util/Exception.h>
#include <gtest/gtest.h>

namespace memprof {
namespace {

// Distinct, 64-byte-aligned fake addresses that are never dereferenced.
void* Fake(uintptr_t i) { return reinterpret_cast<void*>((i + 1) << 6); }

class MemoryTrackerTest : public ::testing::Test {
 protected:
  MemoryTracker& tracker = MemoryTracker::Get();
};

TEST_F(MemoryTrackerTest, AllocAndFreeKeepLiveBytes) {
  const int64_t before = tracker.LiveBytes();
  tracker.RecordAlloc(Fake(1), 100);
  EXPECT_EQ(tracker.LiveBytes(), before + 100);
  EXPECT_EQ(tracker.CategoryOf(Fake(1)), Category::kPending);
  tracker.RecordFree(Fake(1));
  EXPECT_EQ(tracker.LiveBytes(), before);
  EXPECT_EQ(tracker.CategoryOf(Fake(1)), Category::kUnattributed);
}

TEST_F(MemoryTrackerTest, OwnershipIsFinalAndBeatsThePhaseRule) {
  tracker.BeginSession();
  tracker.RecordAlloc(Fake(12), 4);  // before the forward phase
  const int64_t forward = tracker.SetPhase(Phase::kForward, 1);
  tracker.RecordAlloc(Fake(10), 8);
  tracker.RecordAlloc(Fake(11), 16);
  EXPECT_EQ(tracker.ResolvePendingSince(forward, Category::kActivations), 24);
  EXPECT_EQ(tracker.CategoryOf(Fake(12)), Category::kPending);
  EXPECT_EQ(tracker.CategoryOf(Fake(10)), Category::kActivations);
  // Ownership overrides the rule once, then is final.
  EXPECT_EQ(tracker.Resolve(Fake(10), Category::kGradients),
            ResolveResult::kResolved);
  EXPECT_EQ(tracker.Resolve(Fake(10), Category::kGradients),
            ResolveResult::kAlready);
  EXPECT_EQ(tracker.Resolve(Fake(10), Category::kWeights),
            ResolveResult::kConflict);
  EXPECT_EQ(tracker.Resolve(Fake(99), Category::kWeights),
            ResolveResult::kNotFound);
  EXPECT_EQ(tracker.CategoryOf(Fake(10)), Category::kGradients);
  tracker.RecordFree(Fake(10));
  tracker.RecordFree(Fake(11));
  tracker.RecordFree(Fake(12));
  tracker.EndSession();
}

// The progress line's figures: the session's live bytes now and the most
// seen at a mark or a sample (blocks from before the session left out).
// A block allocated before the session (the hook installed earlier, as
// under memprof::gtest_main) is in none of its figures: ownership leaves it
// as it is and says so, so that tracking it can be refused.
TEST_F(MemoryTrackerTest, BlocksFromBeforeTheSessionAreNotResolved) {
  tracker.RecordAlloc(Fake(20), 64);
  tracker.BeginSession();
  tracker.RecordAlloc(Fake(21), 32);
  EXPECT_EQ(tracker.Resolve(Fake(20), Category::kWeights),
            ResolveResult::kBeforeSession);
  EXPECT_EQ(tracker.Resolve(Fake(21), Category::kWeights),
            ResolveResult::kResolved);
  EXPECT_EQ(tracker.CategoryOf(Fake(20)), Category::kPending);
  tracker.RecordFree(Fake(21));
  tracker.EndSession();
  tracker.RecordFree(Fake(20));
}

TEST_F(MemoryTrackerTest, SessionProgressFollowsMarksAndLiveBytes) {
  tracker.RecordAlloc(Fake(30), 1000);  // before the session
  tracker.BeginSession();
  EXPECT_EQ(tracker.SessionProgress().step, 0);
  tracker.SetPhase(Phase::kForward, 2);
  tracker.RecordAlloc(Fake(31), 64);
  tracker.RecordAlloc(Fake(32), 32);
  tracker.SetPhase(Phase::kBackward, 2);  // 96 live at the mark
  tracker.RecordFree(Fake(32));
  MemoryTracker::Progress now = tracker.SessionProgress();
  EXPECT_EQ(now.step, 2);
  EXPECT_EQ(now.phase, Phase::kBackward);
  EXPECT_EQ(now.live_bytes, 64);
  EXPECT_EQ(now.highest_seen_bytes, 96);
  tracker.RecordAlloc(Fake(33), 100);  // 164 live, seen by the sample
  EXPECT_EQ(tracker.SessionProgress().highest_seen_bytes, 164);
  tracker.RecordFree(Fake(33));
  now = tracker.SessionProgress();
  EXPECT_EQ(now.live_bytes, 64);
  EXPECT_EQ(now.highest_seen_bytes, 164);
  tracker.RecordFree(Fake(31));
  tracker.RecordFree(Fake(30));
  tracker.EndSession();
  tracker.BeginSession();  // a new session starts from nothing
  EXPECT_EQ(tracker.SessionProgress().highest_seen_bytes, 0);
  tracker.EndSession();
}

TEST_F(MemoryTrackerTest, SessionSettlesPendingBlocksAndSkipsOlderOnes) {
  tracker.RecordAlloc(Fake(20), 1000);  // before the session
  tracker.BeginSession();
  tracker.SetPhase(Phase::kBackward, 1);
  tracker.RecordAlloc(Fake(21), 4);  // freed pending: temporaries
  tracker.RecordAlloc(Fake(22), 6);  // live pending: unattributed
  tracker.RecordFree(Fake(21));
  tracker.RecordFree(Fake(20));  // older block: not in the session
  const Capture capture = tracker.EndSession();
  ASSERT_EQ(LifetimesOf(capture).size(), 2u);
  std::vector<Lifetime> lives = LifetimesOf(capture);
  std::sort(lives.begin(), lives.end(),
            [](const Lifetime& a, const Lifetime& b) {
              return a.alloc_seq < b.alloc_seq;
            });
  EXPECT_EQ(lives[0].category, Category::kTemporaries);
  EXPECT_EQ(lives[0].bytes, 4);
  EXPECT_LT(lives[0].alloc_seq, lives[0].free_seq);
  EXPECT_EQ(lives[1].category, Category::kUnattributed);
  EXPECT_EQ(lives[1].free_seq, kLive);
  EXPECT_EQ(Analyze(capture).segments.size(), 2u);  // the marks
  tracker.RecordFree(Fake(22));
}

// Note [Named scopes]: the tracker's scope records, read back by the
// analysis: a long name (several name records), a scope opened twice, and
// nothing recorded outside a session.
TEST_F(MemoryTrackerTest, ScopesAreRecordedAndReadBack) {
  tracker.EnterScope("outside.a.session");  // nothing to record
  tracker.BeginSession();
  tracker.ExitScope();  // opened before the session: not the file's
  EXPECT_THROW(tracker.EnterScope(std::string("a\0b", 3)), c10::Error);
  tracker.SetPhase(Phase::kForward, 1);
  const std::string long_name = "model.layers.12.self_attn.rotary";
  tracker.EnterScope(long_name);
  tracker.RecordAlloc(Fake(30), 64);  // live at backward: activations
  tracker.EnterScope("inner");
  tracker.RecordAlloc(Fake(31), 16);
  tracker.RecordFree(Fake(31));  // freed in its scope: temporaries
  tracker.ExitScope();
  tracker.ExitScope();
  const int64_t backward = tracker.SetPhase(Phase::kBackward, 1);
  tracker.ResolvePendingSince(0, Category::kActivations);
  (void)backward;
  tracker.EnterScope(long_name);
  tracker.RecordAlloc(Fake(32), 8);
  tracker.RecordFree(Fake(32));
  tracker.ExitScope();
  tracker.RecordFree(Fake(30));
  const Analysis a = Analyze(tracker.EndSession());
  ASSERT_EQ(a.scopes.size(), 2u);
  EXPECT_EQ(a.scopes[0].name, long_name);
  EXPECT_EQ(a.scopes[0].activations_bytes, 64);
  EXPECT_EQ(a.scopes[0].temporaries_peak_bytes, 16);
  EXPECT_EQ(a.scopes[1].name, "inner");
  EXPECT_EQ(a.scopes[1].activations_bytes, 0);
  EXPECT_EQ(a.scopes[1].temporaries_peak_bytes, 16);
}

TEST_F(MemoryTrackerTest, ConcurrentThreadsLoseNoBlock) {
  constexpr int kThreads = 4;
  constexpr int kBlocks = 20000;
  const int64_t before = tracker.LiveBytes();
  tracker.BeginSession();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Grow the tables well past their first size, then free in reverse.
      for (int i = 0; i < kBlocks; ++i) {
        tracker.RecordAlloc(Fake(1000 + t * kBlocks + i), i + 1);
      }
      for (int i = kBlocks - 1; i >= 0; --i) {
        tracker.RecordFree(Fake(1000 + t * kBlocks + i));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  const Capture capture = tracker.EndSession();
  EXPECT_EQ(tracker.LiveBytes(), before);
  ASSERT_EQ(LifetimesOf(capture).size(), size_t{kThreads} * kBlocks);
  int64_t bytes = 0;
  std::vector<int64_t> seqs;
  for (const Lifetime& life : LifetimesOf(capture)) {
    bytes += life.bytes;
    EXPECT_NE(life.free_seq, kLive);
    EXPECT_EQ(life.category, Category::kTemporaries);
    seqs.push_back(life.alloc_seq);
    seqs.push_back(life.free_seq);
  }
  EXPECT_EQ(bytes, kThreads * (int64_t{kBlocks} * (kBlocks + 1) / 2));
  // Every event took its own seq: one total order over all threads.
  std::sort(seqs.begin(), seqs.end());
  EXPECT_EQ(std::adjacent_find(seqs.begin(), seqs.end()), seqs.end());
}

TEST_F(MemoryTrackerTest, LimitRefusesTheBlockOverItAndRecordsTheFirstRefusal) {
  tracker.RecordAlloc(Fake(30), 5000);  // before the session: not counted
  tracker.SetMemoryLimit(100);
  tracker.BeginSession();
  const int64_t forward = tracker.SetPhase(Phase::kForward, 2);
  ASSERT_TRUE(tracker.RecordAlloc(Fake(31), 60));
  ASSERT_TRUE(tracker.RecordAlloc(Fake(32), 40));  // exactly at the limit
  EXPECT_FALSE(tracker.RecordAlloc(Fake(33), 1));
  EXPECT_FALSE(tracker.RecordAlloc(Fake(34), 50));  // not the first
  const OutOfMemory oom = tracker.out_of_memory();
  EXPECT_GT(oom.seq, forward);
  EXPECT_EQ(oom.requested_bytes, 1);
  EXPECT_EQ(oom.live_bytes, 100);
  EXPECT_EQ(oom.limit_bytes, 100);
  EXPECT_EQ(oom.phase, Phase::kForward);
  EXPECT_EQ(oom.step, 2);
  // In forward, the live pending blocks became activations at the refusal.
  EXPECT_EQ(tracker.CategoryOf(Fake(31)), Category::kActivations);
  EXPECT_EQ(tracker.CategoryOf(Fake(33)), Category::kUnattributed);  // none
  tracker.RecordFree(Fake(31));  // the unwinding: freed after the refusal
  ASSERT_TRUE(tracker.RecordAlloc(Fake(35), 60));  // room again
  tracker.RecordFree(Fake(35));
  tracker.RecordFree(Fake(32));
  tracker.SetMemoryLimit(0);
  const Capture capture = tracker.EndSession();
  EXPECT_EQ(capture.out_of_memory.seq, oom.seq);
  const Breakdown live = Analyze(capture).out_of_memory_bytes;
  EXPECT_EQ(Sum(live), oom.live_bytes);
  EXPECT_EQ(live[Index(Category::kActivations)], 100);
  tracker.RecordFree(Fake(30));
  tracker.BeginSession();
  EXPECT_EQ(tracker.out_of_memory().seq, -1) << "a new session starts clean";
  tracker.EndSession();
}

}  // namespace
}  // namespace memprof

namespace memprof {
namespace {

// Note [Capture file]: every committed event is in the file while the
// session runs (what a rank killed now would leave), and a second reader
// of the same file sees the session as killed mid-run (Note [Killed
// capture]): pending blocks of the forward in force are activations.
TEST_F(MemoryTrackerTest, TheFileHoldsEveryEventWhileTheSessionRuns) {
  const TempDir dir;
  const std::string path = CapturePath(dir.path().string(), 5);
  tracker.BeginSession(path, "{\"context\": {}}");
  tracker.RecordAlloc(Fake(40), 1000);
  ASSERT_EQ(tracker.Resolve(Fake(40), Category::kWeights),
            ResolveResult::kResolved);
  tracker.SetPhase(Phase::kForward, 1);
  tracker.RecordAlloc(Fake(41), 64);
  tracker.RecordAlloc(Fake(42), 32);
  tracker.RecordFree(Fake(42));
  {
    CaptureReader reader(path);
    EXPECT_EQ(reader.header().meta_json, "{\"context\": {}}");
    Record r;
    RecordKind kind;
    std::vector<RecordKind> kinds;
    while (reader.Next(r, kind)) kinds.push_back(kind);
    EXPECT_FALSE(reader.torn());
    EXPECT_EQ(kinds,
              (std::vector<RecordKind>{RecordKind::kMark, RecordKind::kAlloc,
                                       RecordKind::kResolve, RecordKind::kMark,
                                       RecordKind::kAlloc, RecordKind::kAlloc,
                                       RecordKind::kFree}));
    const Analysis killed = Analyze(CaptureFromFile(path));
    EXPECT_TRUE(killed.killed);
    EXPECT_EQ(killed.last_mark.phase, Phase::kForward);
    EXPECT_EQ(killed.stats[Index(Category::kWeights)].current, 1000);
    EXPECT_EQ(killed.stats[Index(Category::kActivations)].current, 64);
    EXPECT_EQ(killed.stats[Index(Category::kTemporaries)].freed, 32);
  }
  const Analysis ended = Analyze(tracker.EndSession());
  EXPECT_FALSE(ended.killed);
  EXPECT_EQ(ended.stats[Index(Category::kUnattributed)].current, 64)
      << "a block still pending at a clean end is unattributed";
  tracker.RecordFree(Fake(40));
  tracker.RecordFree(Fake(41));
}

TEST(CaptureReader, RefusesAFileThatIsNotACapture) {
  const TempDir dir;
  const std::string path = (dir.path() / "capture-0.bin").string();
  WriteFile(path, "{\"schema\": \"memprof.rank/1.7\"}");
  try {
    CaptureReader reader(path);
    FAIL() << "read a JSON file as a capture";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": not a memprof capture"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace memprof
