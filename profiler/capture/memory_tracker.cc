#include "profiler/capture/memory_tracker.h"

#include <immintrin.h>
#include <sys/mman.h>

#include <algorithm>
#include <mutex>
#include <new>
#include <thread>

#include <c10/util/Exception.h>

namespace memprof {
namespace {

constexpr size_t kInitialSlots = 1 << 12;
constexpr uint64_t kBytesMask = (uint64_t{1} << 48) - 1;
// Internal flag: the category came from ownership (Resolve), not a rule.
constexpr uint8_t kFlagOwned = 0x80;

uint64_t Tag(int64_t bytes, Category category, uint8_t flags) {
  return static_cast<uint64_t>(bytes) |
         (static_cast<uint64_t>(category) << 48) |
         (static_cast<uint64_t>(flags) << 56);
}
int64_t BytesOf(uint64_t tagged) {
  return static_cast<int64_t>(tagged & kBytesMask);
}
Category CategoryOfTag(uint64_t tagged) {
  return static_cast<Category>((tagged >> 48) & 0xff);
}
uint8_t FlagsOf(uint64_t tagged) { return static_cast<uint8_t>(tagged >> 56); }

// Fibonacci hashing of the block address (blocks are 16-byte aligned).
size_t Home(const void* ptr, size_t mask) {
  return static_cast<size_t>((reinterpret_cast<uintptr_t>(ptr) >> 4) *
                                 0x9E3779B97F4A7C15ull >>
                             32) &
         mask;
}

Lifetime ToLifetime(int64_t alloc_seq, int64_t free_seq, uint64_t tagged,
                    const void* ptr) {
  Lifetime life;
  life.address = reinterpret_cast<uintptr_t>(ptr);
  life.alloc_seq = alloc_seq;
  life.free_seq = free_seq;
  life.bytes = BytesOf(tagged);
  life.category = CategoryOfTag(tagged);
  life.flags = static_cast<uint8_t>(FlagsOf(tagged) & ~kFlagOwned);
  return life;
}

int64_t NanosecondsSince(std::chrono::steady_clock::time_point begin) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now() - begin)
      .count();
}

}  // namespace

void MemoryTracker::SpinLock::LockContended() {
  for (int spins = 0; locked_.exchange(true, std::memory_order_acquire);) {
    while (locked_.load(std::memory_order_relaxed)) {
      if (++spins < 64) {
        _mm_pause();
      } else {
        std::this_thread::yield();  // the holder may have been preempted
      }
    }
  }
}

void MemoryTracker::Log::NextChunk() {
  current_ = started_ ? current_ + 1 : 0;
  started_ = true;
  used_ = 0;
  if (current_ < chunks_.size()) return;
  void* chunk =
      ::mmap(nullptr, kChunkEntries * sizeof(LogEntry), PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (chunk == MAP_FAILED) throw std::bad_alloc();
  chunks_.push_back(static_cast<LogEntry*>(chunk));
}

void MemoryTracker::Log::Clear() {
  current_ = 0;
  used_ = kChunkEntries;
  started_ = false;
}

void MemoryTracker::Log::AppendTo(std::vector<Lifetime>& out) const {
  if (!started_) return;
  for (size_t c = 0; c <= current_; ++c) {
    const size_t n = c < current_ ? kChunkEntries : used_;
    for (size_t i = 0; i < n; ++i) {
      const LogEntry& e = chunks_[c][i];
      out.push_back(ToLifetime(e.alloc_seq, e.free_seq, e.tagged, e.ptr));
    }
  }
}

MemoryTracker& MemoryTracker::Get() {
  static MemoryTracker* tracker = new MemoryTracker();  // never destroyed
  return *tracker;
}

MemoryTracker::MemoryTracker() : slots_(kInitialSlots) {}

size_t MemoryTracker::Find(const void* ptr) const {
  const size_t mask = slots_.size() - 1;
  for (size_t i = Home(ptr, mask); slots_[i].ptr != nullptr;
       i = (i + 1) & mask) {
    if (slots_[i].ptr == ptr) return i;
  }
  return slots_.size();
}

void MemoryTracker::Insert(const Slot& slot) {
  if (2 * (used_ + 1) > slots_.size()) Grow();
  const size_t mask = slots_.size() - 1;
  size_t i = Home(slot.ptr, mask);
  for (; slots_[i].ptr != nullptr; i = (i + 1) & mask) {
    TORCH_INTERNAL_ASSERT(slots_[i].ptr != slot.ptr, "block recorded twice");
  }
  slots_[i] = slot;
  ++used_;
}

// Backward-shift deletion keeps probe chains intact without tombstones.
void MemoryTracker::EraseAt(size_t index) {
  const size_t mask = slots_.size() - 1;
  size_t hole = index;
  for (size_t i = (index + 1) & mask; slots_[i].ptr != nullptr;
       i = (i + 1) & mask) {
    // Slot i may fill the hole unless its home lies in (hole, i].
    if (((i - Home(slots_[i].ptr, mask)) & mask) >= ((i - hole) & mask)) {
      slots_[hole] = slots_[i];
      hole = i;
    }
  }
  slots_[hole].ptr = nullptr;
  --used_;
}

void MemoryTracker::Grow() {
  std::vector<Slot> old(slots_.size() * 2);
  old.swap(slots_);
  used_ = 0;
  for (const Slot& slot : old) {
    if (slot.ptr != nullptr) Insert(slot);
  }
}

void MemoryTracker::Retag(Slot& slot, Category to, uint8_t add_flags) {
  slot.tagged = Tag(BytesOf(slot.tagged), to,
                    static_cast<uint8_t>(FlagsOf(slot.tagged) | add_flags));
}

bool MemoryTracker::RecordAlloc(void* ptr, int64_t bytes) {
  std::lock_guard<SpinLock> guard(lock_);
  if (limit_bytes_ != 0 && logging_ &&
      session_current_ + bytes > limit_bytes_) {
    RefuseLocked(bytes, limit_bytes_);
    return false;
  }
  Insert(Slot{ptr, seq_++, Tag(bytes, Category::kPending, 0)});
  ++count_;
  total_current_ += bytes;
  total_peak_ = std::max(total_peak_, total_current_);
  if (logging_) session_current_ += bytes;
  return true;
}

void MemoryTracker::RecordRefusal(int64_t bytes, int64_t limit_bytes) {
  std::lock_guard<SpinLock> guard(lock_);
  if (logging_) RefuseLocked(bytes, limit_bytes);
}

void MemoryTracker::RefuseLocked(int64_t bytes, int64_t limit_bytes) {
  const int64_t seq = seq_++;
  if (out_of_memory_.seq >= 0) return;  // the first refusal is the failure
  const PhaseMark& now = marks_.back();
  out_of_memory_ = OutOfMemory{seq,         bytes,     session_current_,
                               limit_bytes, now.phase, now.step};
  if (now.phase == Phase::kForward) {
    ResolvePendingSinceLocked(now.seq, Category::kActivations);
  }
}

void MemoryTracker::RecordFree(void* ptr) {
  std::lock_guard<SpinLock> guard(lock_);
  const int64_t seq = seq_++;
  const size_t index = Find(ptr);
  TORCH_INTERNAL_ASSERT(index < slots_.size(), "free of an unknown block");
  Slot& slot = slots_[index];
  if (CategoryOfTag(slot.tagged) == Category::kPending) {
    Retag(slot, Category::kTemporaries);  // freed unresolved: a temporary
  }
  const int64_t bytes = BytesOf(slot.tagged);
  freed_[Index(CategoryOfTag(slot.tagged))] += bytes;
  total_current_ -= bytes;
  if (logging_ && slot.seq >= begin_seq_) {
    log_.Append(LogEntry{slot.seq, seq, slot.tagged, slot.ptr});
    session_current_ -= bytes;
  }
  EraseAt(index);
}

void MemoryTracker::BeginSession() {
  const int64_t unix_us =
      std::chrono::duration_cast<std::chrono::microseconds>(
          std::chrono::system_clock::now().time_since_epoch())
          .count();
  begin_time_ = std::chrono::steady_clock::now();
  std::lock_guard<SpinLock> guard(lock_);
  log_.Clear();
  begin_seq_ = seq_;
  logging_ = true;
  marks_.clear();
  marks_.push_back(PhaseMark{seq_, Phase::kIdle, 0, 0});
  begin_unix_us_ = unix_us;
  session_current_ = 0;
  out_of_memory_ = OutOfMemory{};
}

void MemoryTracker::SetMemoryLimit(int64_t bytes) {
  std::lock_guard<SpinLock> guard(lock_);
  limit_bytes_ = bytes;
}

OutOfMemory MemoryTracker::out_of_memory() const {
  std::lock_guard<SpinLock> guard(lock_);
  return out_of_memory_;
}

int64_t MemoryTracker::SetPhase(Phase phase, int32_t step) {
  const int64_t time_ns = NanosecondsSince(begin_time_);
  std::lock_guard<SpinLock> guard(lock_);
  marks_.push_back(PhaseMark{seq_, phase, step, time_ns});
  return seq_;
}

ResolveResult MemoryTracker::Resolve(const void* ptr, Category category,
                                     uint8_t flags) {
  std::lock_guard<SpinLock> guard(lock_);
  const size_t index = Find(ptr);
  if (index == slots_.size()) return ResolveResult::kNotFound;
  Slot& slot = slots_[index];
  if (FlagsOf(slot.tagged) & kFlagOwned) {
    return CategoryOfTag(slot.tagged) == category ? ResolveResult::kAlready
                                                  : ResolveResult::kConflict;
  }
  Retag(slot, category, static_cast<uint8_t>(kFlagOwned | flags));
  return ResolveResult::kResolved;
}

int64_t MemoryTracker::ResolvePendingSince(int64_t seq, Category category) {
  std::lock_guard<SpinLock> guard(lock_);
  return ResolvePendingSinceLocked(seq, category);
}

int64_t MemoryTracker::ResolvePendingSinceLocked(int64_t seq,
                                                 Category category) {
  const int64_t from = std::max(seq, begin_seq_);
  int64_t bytes = 0;
  for (Slot& slot : slots_) {
    if (slot.ptr != nullptr && slot.seq >= from &&
        CategoryOfTag(slot.tagged) == Category::kPending) {
      Retag(slot, category);
      bytes += BytesOf(slot.tagged);
    }
  }
  return bytes;
}

Category MemoryTracker::CategoryOf(const void* ptr) const {
  std::lock_guard<SpinLock> guard(lock_);
  const size_t index = Find(ptr);
  return index == slots_.size() ? Category::kUnattributed
                                : CategoryOfTag(slots_[index].tagged);
}

Capture MemoryTracker::EndSession() {
  std::lock_guard<SpinLock> guard(lock_);
  Capture capture;
  capture.begin_seq = begin_seq_;
  capture.end_seq = seq_;
  capture.begin_unix_us = begin_unix_us_;
  capture.end_ns = NanosecondsSince(begin_time_);
  capture.out_of_memory = out_of_memory_;
  logging_ = false;
  log_.AppendTo(capture.lifetimes);
  log_.Clear();
  for (Slot& slot : slots_) {
    if (slot.ptr == nullptr || slot.seq < begin_seq_) continue;
    if (CategoryOfTag(slot.tagged) == Category::kPending) {
      Retag(slot, Category::kUnattributed);
    }
    capture.lifetimes.push_back(
        ToLifetime(slot.seq, kLive, slot.tagged, slot.ptr));
  }
  capture.marks.swap(marks_);
  marks_.clear();
  return capture;
}

std::array<Stat, kNumCategorySlots> MemoryTracker::CategoryCounters() const {
  std::lock_guard<SpinLock> guard(lock_);
  std::array<Stat, kNumCategorySlots> stats{};
  for (const Slot& slot : slots_) {
    if (slot.ptr != nullptr) {
      stats[Index(CategoryOfTag(slot.tagged))].current += BytesOf(slot.tagged);
    }
  }
  for (int c = 0; c < kNumCategorySlots; ++c) {
    stats[c].freed = freed_[c];
    stats[c].allocated = stats[c].current + freed_[c];
  }
  return stats;
}

Stat MemoryTracker::Total() const {
  std::lock_guard<SpinLock> guard(lock_);
  Stat total;
  for (int64_t bytes : freed_) total.freed += bytes;
  total.current = total_current_;
  total.allocated = total.current + total.freed;
  total.peak = total_peak_;
  return total;
}

int64_t MemoryTracker::allocation_count() const {
  std::lock_guard<SpinLock> guard(lock_);
  return count_;
}

}  // namespace memprof
