// MemoryTracker: the backend-independent bookkeeping behind every figure.
//
// Note [Block lifetimes]
// Every allocation a backend reports becomes a Block {bytes, seq, step, phase,
// category}. `seq` is one global counter ticked by every alloc and every
// free, so the events of all threads are totally ordered. A block starts as
// kPending and gets its category later: by ownership (Resolve: parameter,
// .grad, optimizer-state, bucket and batch storages), by the phase rule
// (ResolvePending: forward allocations still live when backward starts are
// activations), at its free (still pending: temporaries) or at the end of
// the session (still pending: unattributed). Ownership beats phase: Resolve
// may overwrite a phase-rule category, never another owner's. When a block
// is freed its Lifetime {alloc_seq, free_seq, bytes, final category} goes
// to a log; the timeline, the peaks and the breakdowns are computed from
// those lifetimes afterwards (lifetime_analysis.h), so a late resolution
// never corrupts a figure computed earlier.
//
// Note [Hook cost]
// The hot path is RecordAlloc/RecordFree: one atomic tick of `seq`, one
// shard spinlock (64 shards chosen by pointer hash), an open-addressing
// insert/erase in the shard's flat table, plain per-shard counters, and one
// atomic add on the total. The backend's free handle lives in the table
// slot, so no block costs a heap allocation of its own. Tables and logs grow
// with operator new (malloc), never through a hooked allocator.
//
// Locking: each Shard's fields are guarded by its own `lock`; nothing holds
// two shard locks at once. `phase_`, `step_`, `seq_`, `total_*` are atomics.
// BeginSession/SetPhase/EndSession are called by the one thread that drives
// the training loop.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <limits>
#include <vector>

#include "profiler/category.h"

namespace memprof {

// The c10 vocabulary: bytes now, at most, ever allocated, ever freed.
struct Stat {
  int64_t current = 0;
  int64_t peak = 0;
  int64_t allocated = 0;
  int64_t freed = 0;
};

inline constexpr int64_t kLive = std::numeric_limits<int64_t>::max();

// One block of the session, freed (free_seq) or still live (kLive).
struct Lifetime {
  int64_t alloc_seq = 0;
  int64_t free_seq = kLive;
  int64_t bytes = 0;
  int32_t step = 0;
  Phase phase = Phase::kIdle;  // phase at allocation
  Category category = Category::kUnattributed;  // final
  uint8_t flags = 0;                            // kFlagBuffer...
};

// The loop entered `phase` of `step` when the counter stood at `seq`.
struct PhaseMark {
  int64_t seq = 0;
  Phase phase = Phase::kIdle;
  int32_t step = 0;
};

// What a backend needs to free a block once the tracker has forgotten it.
struct BackendHandle {
  void* ctx = nullptr;
  void (*deleter)(void*) = nullptr;
};

// Everything a session recorded; input of Analyze().
struct Capture {
  std::vector<Lifetime> lifetimes;  // unordered
  std::vector<PhaseMark> marks;     // by seq; marks[0] is the session start
  int64_t begin_seq = 0;
  int64_t end_seq = 0;  // one past the last event
};

enum class ResolveResult { kResolved, kAlready, kNotFound, kConflict };

class MemoryTracker {
 public:
  static constexpr int kShardBits = 6;
  static constexpr int kNumShards = 1 << kShardBits;

  // The process-wide tracker. Never destroyed: blocks may be freed during
  // static destruction.
  static MemoryTracker& Get();

  // Hot path, any thread. `ptr` must not be null.
  void RecordAlloc(void* ptr, int64_t bytes, BackendHandle handle);
  // Returns the handle given at RecordAlloc. `ptr` must be live.
  BackendHandle RecordFree(void* ptr);

  // Starts recording lifetimes; blocks allocated before are left out of the
  // session's figures. Discards what an earlier session left.
  void BeginSession();
  void SetPhase(Phase phase, int32_t step);
  Phase phase() const { return phase_.load(std::memory_order_relaxed); }
  int32_t step() const { return step_.load(std::memory_order_relaxed); }

  // Ownership of the live block starting at `ptr` (a storage's data).
  ResolveResult Resolve(const void* ptr, Category category, uint8_t flags = 0);
  // Phase rule: every live pending block of this session allocated in
  // `phase` of `step` becomes `category`. Returns the bytes resolved.
  int64_t ResolvePending(Phase phase, int32_t step, Category category);
  // Category of the live block at `ptr`; kUnattributed when not recorded.
  Category CategoryOf(const void* ptr) const;

  // Ends the session: live pending blocks become unattributed; returns the
  // session's lifetimes (live blocks with free_seq = kLive) and marks.
  Capture EndSession();

  // Live counters by the category each block has now (pending included).
  // `peak` is kept for the total only: a category's peak depends on final
  // categories and is computed from lifetimes (Analyze).
  std::array<Stat, kNumCategorySlots> CategoryCounters() const;
  Stat Total() const;
  int64_t allocation_count() const;

 private:
  struct Slot {
    void* ptr = nullptr;  // nullptr: empty
    int64_t bytes = 0;
    int64_t seq = 0;
    int32_t step = 0;
    Phase phase = Phase::kIdle;
    Category category = Category::kPending;
    uint8_t flags = 0;
    BackendHandle handle;
  };

  class SpinLock {
   public:
    void lock();
    void unlock() { locked_.store(false, std::memory_order_release); }

   private:
    std::atomic<bool> locked_{false};
  };

  struct alignas(64) Shard {
    mutable SpinLock lock;
    std::vector<Slot> slots;  // power-of-two size, linear probing
    size_t used = 0;
    int64_t count = 0;  // allocations recorded
    std::array<int64_t, kNumCategorySlots> allocated{};
    std::array<int64_t, kNumCategorySlots> freed{};
    std::vector<Lifetime> log;  // freed blocks of the session

    size_t Find(const void* ptr) const;  // slots.size() when absent
    void Insert(const Slot& slot);
    void EraseAt(size_t index);
    void Grow();
    void Move(Slot& slot, Category to);  // moves counters, sets category
  };

  MemoryTracker();
  static uint64_t Hash(const void* ptr);
  Shard& ShardFor(const void* ptr) { return shards_[Hash(ptr) >> (64 - kShardBits)]; }
  const Shard& ShardFor(const void* ptr) const {
    return shards_[Hash(ptr) >> (64 - kShardBits)];
  }

  std::atomic<int64_t> seq_{0};
  std::atomic<Phase> phase_{Phase::kIdle};
  std::atomic<int32_t> step_{0};
  std::atomic<bool> logging_{false};
  std::atomic<int64_t> begin_seq_{0};
  std::atomic<int64_t> total_current_{0};
  std::atomic<int64_t> total_peak_{0};
  std::vector<PhaseMark> marks_;  // loop thread only
  std::array<Shard, kNumShards> shards_;
};

}  // namespace memprof
