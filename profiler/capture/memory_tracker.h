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
// another owner's. Every event goes to the session's capture file as it
// happens (Note [Capture file]): the alloc, the free with the block's
// category then, each resolution, each phase mark; the timeline, the peaks
// and the breakdowns are computed from that file afterwards
// (lifetime_analysis.h), with each block's final category, so a late
// resolution never corrupts a figure.
//
// Note [Hook cost]
// RecordAlloc/RecordFree are the hot path, inline in this header so the
// hook's translation unit compiles them into its own allocate and delete:
// one spinlock (an atomic exchange to take it, a plain store to release
// it), one probe of a flat open-addressing table of 24-byte slots (home
// slot found in the common case; a free whose next slot is empty erases
// without shifting), and at the alloc and at the free one 32-byte record
// written into the capture file's mapped ring window (so the log neither
// grows in memory nor disturbs the malloc heap the profiled program
// allocates from, and outlives a killed process). Nothing else: no branch
// on categories (a block freed while pending is read as a temporary when
// the file is read), no totals, no counts, no peaks (all of them follow
// from the records), one
// comparison for the memory limit (refuse_above_ is the limit during a
// session and the largest int64 otherwise) and one for "is this block the
// session's" (log_from_seq_ is the session's first seq, kLive outside
// one). `seq` and the file's cursor are plain fields under the lock: a pair
// costs two atomic operations in all, where a sharded table would need an
// atomic `seq` on top. Phase and step are not stored per block (they
// follow from seq and the marks), nor is a backend handle (the CPU hook
// keeps its deleter outside the table). Instructions per pair are counted
// by bench/instructions.sh and gated (ctest bench.hot_path_gate,
// bench/hot_path_bound.txt); the designs tried and their costs are in
// docs/internals.md ("Hook overhead").
//
// Locking: `lock_` guards every field declared after it. `begin_time_`
// belongs to the thread that drives the training loop (BeginSession,
// SetPhase, EndSession); Capture is built under the lock.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "profiler/base/category.h"
#include "profiler/capture/capture_file.h"

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
// blocks allocated before that seq and freed after it
// (Analysis::out_of_memory_bytes). When it
// falls in forward, the live pending blocks allocated since forward began
// become activations at once, as the phase rule would have made them at
// backward: the unwinding that follows frees them, and they would
// otherwise read as temporaries. When it falls in model_init (the model
// alone does not fit), they become weights: the half-built model's
// parameters and buffers, freed unregistered as the construction unwinds.
struct OutOfMemory {
  int64_t seq = -1;  // -1: no allocation was refused
  int64_t requested_bytes = 0;
  int64_t live_bytes = 0;  // the session's live bytes when it was refused
  int64_t limit_bytes = 0;
  Phase phase = Phase::kIdle;
  int32_t step = 0;
  // The system refused it, not the limit (Note [System refusals]):
  // limit_bytes is then the machine's memory.
  bool by_system = false;
};

// A session's capture: its file (Note [Capture file]) and what the
// tracker knew when it ended; input of Analyze().
struct Capture {
  std::shared_ptr<const CaptureFile> file;
  int64_t begin_seq = 0;
  int64_t end_seq = 0;        // one past the last event
  int64_t begin_unix_us = 0;  // wall clock when the session began
  int64_t end_ns = 0;         // since the session began, steady clock
  OutOfMemory out_of_memory;  // seq -1 unless the limit refused a block
};

// kBeforeSession: the block is live but was allocated before the session
// began (a tensor made before it, under a hook installed earlier): in none
// of the session's figures, so left as it is, as a block never seen.
enum class ResolveResult {
  kResolved,
  kAlready,
  kNotFound,
  kConflict,
  kBeforeSession
};

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
  // `limit_bytes` (a CUDA run's memory fraction), or the system did
  // (`by_system`; `limit_bytes` is then the machine's memory): recorded as
  // the memory limit's refusal is (Note [Memory limit]). In a session only.
  void RecordRefusal(int64_t bytes, int64_t limit_bytes,
                     bool by_system = false);

  // Starts recording the session's events to the capture file at
  // `capture_path` ("": an unnamed temporary file), its header carrying
  // `meta_json`; blocks allocated before are left out of the session's
  // figures. Throws std::runtime_error when the file cannot be written.
  void BeginSession(const std::string& capture_path = "",
                    const std::string& meta_json = "{}");
  // The wall clock when the session began (Capture::begin_unix_us).
  int64_t session_begin_unix_us() const { return begin_unix_us_; }
  // Returns the seq at which the phase begins. Throws std::runtime_error
  // naming the capture file when a spill of it failed since the last mark
  // (a full disk: Note [Capture file]).
  int64_t SetPhase(Phase phase, int32_t step);
  // The seq the next event takes.
  int64_t NextSeq() const;
  // A named scope opens (the caller's full name: not empty, no NUL; else
  // c10::Error) or the innermost open one closes: recorded at the seq the
  // next event takes (Note [Named scopes] in lifetime_analysis.h). Loop
  // thread, cold; scopes nest. Outside a session nothing is recorded, nor
  // the close of a scope opened before it began.
  void EnterScope(const std::string& name);
  void ExitScope();
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

  // Ends the session: live pending blocks become unattributed, the file
  // gets its end record and is handed over in the Capture. Throws as
  // SetPhase does, once the session is ended.
  Capture EndSession();

  // Bytes of the blocks live now, in a session or not (a walk of the
  // table, not a hot-path counter).
  int64_t LiveBytes() const;

  // Where the session is, for a progress line (any thread, cold).
  struct Progress {
    int32_t step = 0;  // of the mark in force; 0 before the first step
    Phase phase = Phase::kIdle;
    int64_t live_bytes = 0;  // the session's blocks live now
    // The most live bytes seen at a phase mark or by a SessionProgress
    // call: a lower bound of the session's peak, which the hot path does
    // not keep (Note [Hook cost]); the exact peak follows from the capture.
    int64_t highest_seen_bytes = 0;
  };
  Progress SessionProgress();

 private:
  // bytes (low 48 bits) | category << 48 | flags << 56.
  using Tagged = uint64_t;
  struct Slot {
    const void* ptr = nullptr;  // nullptr: empty
    int64_t seq = 0;
    Tagged tagged = 0;
  };
  class SpinLock {
   public:
    void lock() {
      if (!locked_.exchange(true, std::memory_order_acquire)) return;
      LockContended();
    }
    bool try_lock() {
      return !locked_.exchange(true, std::memory_order_acquire);
    }
    void unlock() { locked_.store(false, std::memory_order_release); }

   private:
    void LockContended();
    std::atomic<bool> locked_{false};
  };

  static constexpr int64_t kNoLimit = std::numeric_limits<int64_t>::max();
  static constexpr Tagged kPendingTag = static_cast<Tagged>(Category::kPending)
                                        << 48;

  // Fibonacci hashing of the block address (blocks are 16-byte aligned).
  static size_t Home(const void* ptr, size_t mask) {
    return static_cast<size_t>((reinterpret_cast<uintptr_t>(ptr) >> 4) *
                                   0x9E3779B97F4A7C15ull >>
                               32) &
           mask;
  }

  MemoryTracker();
  // The whole event, for every case the fast paths leave out; `locked`:
  // the caller holds lock_. Both release it.
  bool RecordAllocSlow(void* ptr, int64_t bytes, bool locked);
  void RecordFreeSlow(void* ptr, bool locked);
  size_t Find(const void* ptr) const;  // mask_ + 1 when absent
  void Insert(const Slot& slot);
  void EraseShifting(size_t index);
  void Grow();
  static void Retag(Slot& slot, Category to, uint8_t add_flags = 0);
  int64_t ResolvePendingSinceLocked(int64_t seq, Category category);
  void RefuseLocked(int64_t bytes, int64_t limit_bytes, bool by_system);
  void ArmLimitLocked();    // refuse_above_ from limit_bytes_ and logging_
  void AppendMarkLocked();  // mark_ to the capture file

  std::chrono::steady_clock::time_point begin_time_;  // loop thread only

  // The fields the hot path touches share two cache lines.
  alignas(64) mutable SpinLock lock_;
  int64_t seq_ = 0;
  int64_t session_current_ = 0;      // live bytes allocated in the session
  int64_t refuse_above_ = kNoLimit;  // Note [Hook cost]
  int64_t log_from_seq_ = kLive;     // Note [Hook cost]
  Slot* slots_ = nullptr;            // table_.data()
  size_t mask_ = 0;                  // table_.size() - 1, a power of two
  size_t used_ = 0;
  CaptureWriter capture_;  // the session's events (Note [Capture file])
  // Cold: touched by sessions, limits and queries only.
  bool logging_ = false;
  int64_t begin_seq_ = 0;
  int64_t begin_unix_us_ = 0;
  int64_t limit_bytes_ = 0;         // 0: none (Note [Memory limit])
  int64_t highest_seen_bytes_ = 0;  // Progress::highest_seen_bytes
  OutOfMemory out_of_memory_;
  PhaseMark mark_;           // the mark in force
  std::vector<Slot> table_;  // linear probing
  // The session's scope names, by the id their records carry, and the
  // scopes its file has open.
  std::unordered_map<std::string, uint32_t> scope_ids_;
  int64_t open_scopes_ = 0;
};

// The fast paths below leave every uncommon case (a contended lock, the
// limit, a grown or taken home slot, a full capture window, a free that must
// shift its neighbours back) to one out-of-line call that does the whole
// event, so the common case keeps its values in registers and saves none.
[[gnu::always_inline]] inline bool MemoryTracker::RecordAlloc(void* ptr,
                                                              int64_t bytes) {
  if (!lock_.try_lock()) return RecordAllocSlow(ptr, bytes, false);
  Slot& slot = slots_[Home(ptr, mask_)];
  const bool logged = seq_ >= log_from_seq_;
  if (slot.ptr != nullptr || 2 * used_ >= mask_ ||
      session_current_ + bytes > refuse_above_ || (logged && capture_.full())) {
    return RecordAllocSlow(ptr, bytes, true);
  }
  const Tagged tagged = static_cast<Tagged>(bytes) | kPendingTag;
  if (logged) {
    capture_.Append(RecordKind::kAlloc, seq_, reinterpret_cast<uintptr_t>(ptr),
                    tagged);
  }
  slot = Slot{ptr, seq_++, tagged};
  ++used_;
  session_current_ += bytes;
  lock_.unlock();
  return true;
}

[[gnu::always_inline]] inline void MemoryTracker::RecordFree(void* ptr) {
  if (!lock_.try_lock()) return RecordFreeSlow(ptr, false);
  const size_t i = Home(ptr, mask_);
  Slot& slot = slots_[i];
  const bool logged = slot.seq >= log_from_seq_;
  if (slot.ptr != ptr || slots_[(i + 1) & mask_].ptr != nullptr ||
      (logged && capture_.full())) {
    return RecordFreeSlow(ptr, true);
  }
  if (logged) {
    capture_.Append(RecordKind::kFree, seq_, reinterpret_cast<uintptr_t>(ptr),
                    slot.tagged);
    session_current_ -= BytesOfTag(slot.tagged);
  }
  ++seq_;
  slot.ptr = nullptr;
  --used_;
  lock_.unlock();
}

}  // namespace memprof
