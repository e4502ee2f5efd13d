// MemoryTracker: the backend-independent bookkeeping behind every figure.
//
// Note [Block lifetimes]
// Every allocation a backend reports becomes a block {bytes, seq,
// category}. `seq` is one global counter ticked by every alloc and every
// free, so the events of all threads are totally ordered; the phase and
// step of a block are those of the PhaseMark in force at its seq. A block
// starts as kPending and gets its category later: by ownership (Resolve:
// parameter, .grad, optimizer-state, bucket and batch storages), by the
// phase rule (ResolvePendingSince: forward allocations still live when
// backward starts are activations), at its free (still pending:
// temporaries) or at the end of the session (still pending: unattributed).
// Ownership beats phase: Resolve may overwrite a phase-rule category, never
// another owner's. When a block is freed its Lifetime {alloc_seq, free_seq,
// bytes, final category} goes to the session log; the timeline, the peaks
// and the breakdowns are computed from those lifetimes afterwards
// (lifetime_analysis.h), so a late resolution never corrupts a figure.
//
// Note [Hook cost]
// RecordAlloc/RecordFree are the hot path: one spinlock (an atomic exchange
// to take it, a plain store to release it), an insert or erase in a flat
// open-addressing table of 24-byte slots, plain counters, and at a free one
// 32-byte append to a log made of fixed chunks mapped straight from the OS
// (so the log neither copies on growth nor disturbs the malloc heap the
// profiled program allocates from). `seq`, the Stats and the log are plain
// fields under the lock: a pair costs two atomic operations in all, where a
// sharded table would need an atomic `seq` and total on top. The hot fields
// share two cache lines; per-category peaks are not kept live (they depend
// on final categories and come from the lifetimes). Phase and step
// are not stored per block (they follow from seq and the marks), nor is a
// backend handle (the CPU hook keeps its deleter outside the table).
// Measured by bench/hook_alloc_bench; figures in the README.
//
// Locking: `lock_` guards every field declared after it. `marks_` belongs
// to the thread that drives the training loop (BeginSession, SetPhase,
// EndSession); Capture is built under the lock.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <vector>

#include "profiler/base/category.h"

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
  Category category = Category::kUnattributed;  // final
  uint8_t flags = 0;                            // kFlagBuffer...
  uint64_t address = 0;                         // the block's data pointer
};

// The loop entered `phase` of `step` when the counter stood at `seq`.
struct PhaseMark {
  int64_t seq = 0;
  Phase phase = Phase::kIdle;
  int32_t step = 0;
  int64_t time_ns = 0;  // since the session began, steady clock
};

// Note [Memory limit]
// With a limit set (profile --memory-limit), an allocation that would take
// the session's live bytes over it is refused, as a device of that size
// would: the hook gives the block back and throws LibTorch's
// c10::OutOfMemoryError. The first refusal is recorded: it takes a seq of
// its own (no block has it), so the live bytes at the failure are the
// blocks allocated before that seq and freed after it (LiveAt). When it
// falls in forward, the live pending blocks allocated since forward began
// become activations at once, as the phase rule would have made them at
// backward: the unwinding that follows frees them, and they would
// otherwise read as temporaries.
struct OutOfMemory {
  int64_t seq = -1;  // -1: no allocation was refused
  int64_t requested_bytes = 0;
  int64_t live_bytes = 0;  // the session's live bytes when it was refused
  int64_t limit_bytes = 0;
  Phase phase = Phase::kIdle;
  int32_t step = 0;
};

// Everything a session recorded; input of Analyze().
struct Capture {
  std::vector<Lifetime> lifetimes;  // unordered
  std::vector<PhaseMark> marks;     // by seq; marks[0] is the session start
  int64_t begin_seq = 0;
  int64_t end_seq = 0;        // one past the last event
  int64_t begin_unix_us = 0;  // wall clock when the session began
  int64_t end_ns = 0;         // since the session began, steady clock
  OutOfMemory out_of_memory;  // seq -1 unless the limit refused a block
};

enum class ResolveResult { kResolved, kAlready, kNotFound, kConflict };

class MemoryTracker {
 public:
  // The process-wide tracker. Never destroyed: blocks may be freed during
  // static destruction.
  static MemoryTracker& Get();

  // Hot path, any thread. `ptr` is not null; 0 < bytes < 2^48. False when
  // the memory limit refuses the block: nothing is recorded but the
  // refusal (Note [Memory limit]); the caller gives the block back.
  bool RecordAlloc(void* ptr, int64_t bytes);
  void RecordFree(void* ptr);  // `ptr` must be live
  // A device allocator refused `bytes` under its own limit of
  // `limit_bytes` (a CUDA run's memory fraction): recorded as the memory
  // limit's refusal is (Note [Memory limit]). In a session only.
  void RecordRefusal(int64_t bytes, int64_t limit_bytes);

  // Starts recording lifetimes; blocks allocated before are left out of the
  // session's figures. Discards what an earlier session left.
  void BeginSession();
  // Returns the seq at which the phase begins.
  int64_t SetPhase(Phase phase, int32_t step);
  // The session's live bytes may not exceed `bytes` (0: no limit). Kept
  // across sessions until set again.
  void SetMemoryLimit(int64_t bytes);
  // The session's first refused allocation; seq -1 when none.
  OutOfMemory out_of_memory() const;

  // Ownership of the live block starting at `ptr` (a storage's data).
  ResolveResult Resolve(const void* ptr, Category category, uint8_t flags = 0);
  // Phase rule: every live pending block allocated at or after `seq` (and
  // in this session) becomes `category`. Returns the bytes resolved.
  int64_t ResolvePendingSince(int64_t seq, Category category);
  // Category of the live block at `ptr`; kUnattributed when not recorded.
  Category CategoryOf(const void* ptr) const;

  // Ends the session: live pending blocks become unattributed; returns the
  // session's lifetimes (live blocks with free_seq = kLive) and marks.
  Capture EndSession();

  // Live counters by the category each block has now (pending included):
  // current and allocated from the live table, freed by final category.
  // The hot path keeps no per-category peak (Note [Hook cost]); peaks by
  // final category come from Analyze(), which reports use.
  std::array<Stat, kNumCategorySlots> CategoryCounters() const;
  Stat Total() const;  // with the live peak of all categories together
  int64_t allocation_count() const;

 private:
  // bytes (low 48 bits) | category << 48 | flags << 56.
  using Tagged = uint64_t;
  struct Slot {
    void* ptr = nullptr;  // nullptr: empty
    int64_t seq = 0;
    Tagged tagged = 0;
  };
  struct LogEntry {
    int64_t alloc_seq;
    int64_t free_seq;
    Tagged tagged;
    const void* ptr;
  };
  // Append-only chunks of LogEntry, mapped from the OS, reused by sessions.
  class Log {
   public:
    void Append(const LogEntry& entry) {
      if (used_ == kChunkEntries) NextChunk();
      chunks_[current_][used_++] = entry;
    }
    void Clear();
    void AppendTo(std::vector<Lifetime>& out) const;

   private:
    static constexpr size_t kChunkEntries = size_t{1} << 16;
    void NextChunk();
    std::vector<LogEntry*> chunks_;
    size_t current_ = 0;
    size_t used_ = kChunkEntries;  // full: the first Append maps a chunk
    bool started_ = false;
  };

  class SpinLock {
   public:
    void lock() {
      if (!locked_.exchange(true, std::memory_order_acquire)) return;
      LockContended();
    }
    void unlock() { locked_.store(false, std::memory_order_release); }

   private:
    void LockContended();
    std::atomic<bool> locked_{false};
  };

  MemoryTracker();
  size_t Find(const void* ptr) const;  // slots_.size() when absent
  void Insert(const Slot& slot);
  void EraseAt(size_t index);
  void Grow();
  static void Retag(Slot& slot, Category to, uint8_t add_flags = 0);
  int64_t ResolvePendingSinceLocked(int64_t seq, Category category);
  void RefuseLocked(int64_t bytes, int64_t limit_bytes);

  std::vector<PhaseMark> marks_;                      // loop thread only
  std::chrono::steady_clock::time_point begin_time_;  // loop thread only

  // The fields the hot path touches share two cache lines.
  alignas(64) mutable SpinLock lock_;
  bool logging_ = false;
  int64_t seq_ = 0;
  int64_t begin_seq_ = 0;
  int64_t begin_unix_us_ = 0;
  int64_t limit_bytes_ = 0;      // 0: none (Note [Memory limit])
  int64_t session_current_ = 0;  // live bytes allocated in the session
  OutOfMemory out_of_memory_;
  int64_t count_ = 0;  // allocations recorded
  int64_t total_current_ = 0;
  int64_t total_peak_ = 0;
  // Bytes freed by final category; a live block's category is in its slot.
  std::array<int64_t, kNumCategorySlots> freed_{};
  std::vector<Slot> slots_;  // power-of-two size, linear probing
  size_t used_ = 0;
  Log log_;  // freed blocks of the session
};

}  // namespace memprof
