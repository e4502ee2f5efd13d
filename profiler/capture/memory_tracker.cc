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

Lifetime ToLifetime(int64_t alloc_seq, int64_t free_seq, uint64_t tagged,
                    const void* ptr) {
  Lifetime life;
  life.address = reinterpret_cast<uintptr_t>(ptr);
  life.alloc_seq = alloc_seq;
  life.free_seq = free_seq;
  life.bytes = BytesOf(tagged);
  life.category = CategoryOfTag(tagged);
  // Freed while pending: a temporary (Note [Block lifetimes]).
  if (free_seq != kLive && life.category == Category::kPending) {
    life.category = Category::kTemporaries;
  }
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
  if (current_ == chunks_.size()) {
    void* chunk =
        ::mmap(nullptr, kChunkEntries * sizeof(LogEntry),
               PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (chunk == MAP_FAILED) throw std::bad_alloc();
    chunks_.push_back(static_cast<LogEntry*>(chunk));
  }
  cursor_ = chunks_[current_];
  end_ = cursor_ + kChunkEntries;
}

void MemoryTracker::Log::Clear() {
  current_ = 0;
  cursor_ = end_ = nullptr;
  started_ = false;
}

void MemoryTracker::Log::AppendTo(std::vector<Lifetime>& out) const {
  if (!started_) return;
  for (size_t c = 0; c <= current_; ++c) {
    const LogEntry* last = c < current_ ? chunks_[c] + kChunkEntries : cursor_;
    for (const LogEntry* e = chunks_[c]; e != last; ++e) {
      out.push_back(ToLifetime(e->alloc_seq, e->free_seq, e->tagged, e->ptr));
    }
  }
}

MemoryTracker& MemoryTracker::Get() {
  static MemoryTracker* tracker = new MemoryTracker();  // never destroyed
  return *tracker;
}

MemoryTracker::MemoryTracker() : table_(kInitialSlots) {
  slots_ = table_.data();
  mask_ = table_.size() - 1;
}

size_t MemoryTracker::Find(const void* ptr) const {
  for (size_t i = Home(ptr, mask_); slots_[i].ptr != nullptr;
       i = (i + 1) & mask_) {
    if (slots_[i].ptr == ptr) return i;
  }
  return mask_ + 1;
}

void MemoryTracker::Insert(const Slot& slot) {
  size_t i = Home(slot.ptr, mask_);
  for (; slots_[i].ptr != nullptr; i = (i + 1) & mask_) {
    TORCH_INTERNAL_ASSERT(slots_[i].ptr != slot.ptr, "block recorded twice");
  }
  slots_[i] = slot;
  ++used_;
}

// Backward-shift deletion keeps probe chains intact without tombstones.
void MemoryTracker::EraseShifting(size_t index) {
  size_t hole = index;
  for (size_t i = (index + 1) & mask_; slots_[i].ptr != nullptr;
       i = (i + 1) & mask_) {
    // Slot i may fill the hole unless its home lies in (hole, i].
    if (((i - Home(slots_[i].ptr, mask_)) & mask_) >= ((i - hole) & mask_)) {
      slots_[hole] = slots_[i];
      hole = i;
    }
  }
  slots_[hole].ptr = nullptr;
  --used_;
}

void MemoryTracker::Grow() {
  std::vector<Slot> old(table_.size() * 2);
  old.swap(table_);
  slots_ = table_.data();
  mask_ = table_.size() - 1;
  used_ = 0;
  for (const Slot& slot : old) {
    if (slot.ptr != nullptr) Insert(slot);
  }
}

bool MemoryTracker::RecordAllocSlow(void* ptr, int64_t bytes, bool locked) {
  if (!locked) lock_.lock();
  std::lock_guard<SpinLock> guard(lock_, std::adopt_lock);
  if (session_current_ + bytes > refuse_above_) {
    RefuseLocked(bytes, limit_bytes_, /*by_system=*/false);
    return false;
  }
  if (2 * (used_ + 1) > mask_ + 1) Grow();  // load factor at most 1/2
  Insert(Slot{ptr, seq_++, Tag(bytes, Category::kPending, 0)});
  session_current_ += bytes;
  return true;
}

void MemoryTracker::RecordFreeSlow(void* ptr, bool locked) {
  if (!locked) lock_.lock();
  std::lock_guard<SpinLock> guard(lock_, std::adopt_lock);
  const int64_t seq = seq_++;
  const size_t index = Find(ptr);
  TORCH_INTERNAL_ASSERT(index <= mask_, "free of an unknown block ", ptr);
  const Slot& slot = slots_[index];
  if (slot.seq >= log_from_seq_) {
    log_.Append(LogEntry{slot.seq, seq, slot.tagged, ptr});
    session_current_ -= BytesOf(slot.tagged);
  }
  EraseShifting(index);
}

void MemoryTracker::ArmLimitLocked() {
  refuse_above_ = logging_ && limit_bytes_ != 0 ? limit_bytes_ : kNoLimit;
}

void MemoryTracker::Retag(Slot& slot, Category to, uint8_t add_flags) {
  slot.tagged = Tag(BytesOf(slot.tagged), to,
                    static_cast<uint8_t>(FlagsOf(slot.tagged) | add_flags));
}

void MemoryTracker::RecordRefusal(int64_t bytes, int64_t limit_bytes,
                                  bool by_system) {
  std::lock_guard<SpinLock> guard(lock_);
  if (logging_) RefuseLocked(bytes, limit_bytes, by_system);
}

void MemoryTracker::RefuseLocked(int64_t bytes, int64_t limit_bytes,
                                 bool by_system) {
  const int64_t seq = seq_++;
  if (out_of_memory_.seq >= 0) return;  // the first refusal is the failure
  const PhaseMark& now = marks_.back();
  out_of_memory_ =
      OutOfMemory{seq,       bytes,    session_current_, limit_bytes,
                  now.phase, now.step, by_system};
  if (now.phase == Phase::kForward) {
    ResolvePendingSinceLocked(now.seq, Category::kActivations);
  }
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
  log_from_seq_ = seq_;
  logging_ = true;
  ArmLimitLocked();
  marks_.clear();
  marks_.push_back(PhaseMark{seq_, Phase::kIdle, 0, 0});
  begin_unix_us_ = unix_us;
  session_current_ = 0;
  out_of_memory_ = OutOfMemory{};
}

void MemoryTracker::SetMemoryLimit(int64_t bytes) {
  std::lock_guard<SpinLock> guard(lock_);
  limit_bytes_ = bytes;
  ArmLimitLocked();
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

int64_t MemoryTracker::NextSeq() const {
  std::lock_guard<SpinLock> guard(lock_);
  return seq_;
}

ResolveResult MemoryTracker::Resolve(const void* ptr, Category category,
                                     uint8_t flags) {
  std::lock_guard<SpinLock> guard(lock_);
  const size_t index = Find(ptr);
  if (index > mask_) return ResolveResult::kNotFound;
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
  for (Slot& slot : table_) {
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
  return index > mask_ ? Category::kUnattributed
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
  log_from_seq_ = kLive;
  ArmLimitLocked();
  log_.AppendTo(capture.lifetimes);
  log_.Clear();
  for (Slot& slot : table_) {
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

int64_t MemoryTracker::LiveBytes() const {
  std::lock_guard<SpinLock> guard(lock_);
  int64_t bytes = 0;
  for (const Slot& slot : table_) {
    if (slot.ptr != nullptr) bytes += BytesOf(slot.tagged);
  }
  return bytes;
}

}  // namespace memprof
