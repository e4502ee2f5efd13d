#include "profiler/memory_tracker.h"

#include <immintrin.h>

#include <mutex>

#include <c10/util/Exception.h>

namespace memprof {
namespace {

constexpr size_t kInitialSlots = 256;
// Internal flag: the category came from ownership (Resolve), not a rule.
constexpr uint8_t kFlagOwned = 0x80;

}  // namespace

void MemoryTracker::SpinLock::lock() {
  while (locked_.exchange(true, std::memory_order_acquire)) {
    while (locked_.load(std::memory_order_relaxed)) _mm_pause();
  }
}

MemoryTracker& MemoryTracker::Get() {
  static MemoryTracker* tracker = new MemoryTracker();  // never destroyed
  return *tracker;
}

MemoryTracker::MemoryTracker() {
  for (Shard& shard : shards_) shard.slots.resize(kInitialSlots);
}

uint64_t MemoryTracker::Hash(const void* ptr) {
  // Fibonacci hashing; blocks are at least 16-byte aligned.
  return (reinterpret_cast<uintptr_t>(ptr) >> 4) * 0x9E3779B97F4A7C15ull;
}

size_t MemoryTracker::Shard::Find(const void* ptr) const {
  const size_t mask = slots.size() - 1;
  // Slot index from the hash bits below the shard bits.
  size_t i = static_cast<size_t>(Hash(ptr) << kShardBits >> 32) & mask;
  while (slots[i].ptr != nullptr) {
    if (slots[i].ptr == ptr) return i;
    i = (i + 1) & mask;
  }
  return slots.size();
}

void MemoryTracker::Shard::Insert(const Slot& slot) {
  if (2 * (used + 1) > slots.size()) Grow();
  const size_t mask = slots.size() - 1;
  size_t i = static_cast<size_t>(Hash(slot.ptr) << kShardBits >> 32) & mask;
  while (slots[i].ptr != nullptr) {
    TORCH_INTERNAL_ASSERT(slots[i].ptr != slot.ptr, "block recorded twice");
    i = (i + 1) & mask;
  }
  slots[i] = slot;
  ++used;
}

// Backward-shift deletion keeps probe chains intact without tombstones.
void MemoryTracker::Shard::EraseAt(size_t index) {
  const size_t mask = slots.size() - 1;
  size_t hole = index;
  size_t i = (index + 1) & mask;
  while (slots[i].ptr != nullptr) {
    size_t home =
        static_cast<size_t>(Hash(slots[i].ptr) << kShardBits >> 32) & mask;
    // Move slot i into the hole when its home is not in (hole, i].
    if (((i - home) & mask) >= ((i - hole) & mask)) {
      slots[hole] = slots[i];
      hole = i;
    }
    i = (i + 1) & mask;
  }
  slots[hole] = Slot{};
  --used;
}

void MemoryTracker::Shard::Grow() {
  std::vector<Slot> old(slots.size() * 2);
  old.swap(slots);
  used = 0;
  for (const Slot& slot : old) {
    if (slot.ptr != nullptr) Insert(slot);
  }
}

void MemoryTracker::Shard::Move(Slot& slot, Category to) {
  allocated[Index(slot.category)] -= slot.bytes;
  allocated[Index(to)] += slot.bytes;
  slot.category = to;
}

void MemoryTracker::RecordAlloc(void* ptr, int64_t bytes,
                                BackendHandle handle) {
  Slot slot;
  slot.ptr = ptr;
  slot.bytes = bytes;
  slot.seq = seq_.fetch_add(1, std::memory_order_relaxed);
  slot.step = step_.load(std::memory_order_relaxed);
  slot.phase = phase_.load(std::memory_order_relaxed);
  slot.handle = handle;
  Shard& shard = ShardFor(ptr);
  shard.lock.lock();
  shard.Insert(slot);
  ++shard.count;
  shard.allocated[Index(Category::kPending)] += bytes;
  shard.lock.unlock();
  const int64_t now =
      total_current_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  int64_t peak = total_peak_.load(std::memory_order_relaxed);
  while (now > peak && !total_peak_.compare_exchange_weak(
                           peak, now, std::memory_order_relaxed)) {
  }
}

BackendHandle MemoryTracker::RecordFree(void* ptr) {
  const int64_t seq = seq_.fetch_add(1, std::memory_order_relaxed);
  Shard& shard = ShardFor(ptr);
  shard.lock.lock();
  const size_t index = shard.Find(ptr);
  TORCH_INTERNAL_ASSERT(index < shard.slots.size(), "free of unknown block");
  Slot& slot = shard.slots[index];
  if (slot.category == Category::kPending) {
    shard.Move(slot, Category::kTemporaries);
  }
  shard.freed[Index(slot.category)] += slot.bytes;
  if (logging_.load(std::memory_order_relaxed) &&
      slot.seq >= begin_seq_.load(std::memory_order_relaxed)) {
    shard.log.push_back(Lifetime{slot.seq, seq, slot.bytes, slot.step,
                                 slot.phase, slot.category,
                                 static_cast<uint8_t>(slot.flags & ~kFlagOwned)});
  }
  const int64_t bytes = slot.bytes;
  const BackendHandle handle = slot.handle;
  shard.EraseAt(index);
  shard.lock.unlock();
  total_current_.fetch_sub(bytes, std::memory_order_relaxed);
  return handle;
}

void MemoryTracker::BeginSession() {
  for (Shard& shard : shards_) {
    shard.lock.lock();
    shard.log.clear();
    shard.lock.unlock();
  }
  const int64_t begin = seq_.load();
  begin_seq_.store(begin);
  marks_.clear();
  marks_.push_back(PhaseMark{begin, Phase::kIdle, 0});
  phase_.store(Phase::kIdle);
  step_.store(0);
  logging_.store(true);
}

void MemoryTracker::SetPhase(Phase phase, int32_t step) {
  step_.store(step, std::memory_order_relaxed);
  phase_.store(phase, std::memory_order_relaxed);
  marks_.push_back(PhaseMark{seq_.load(), phase, step});
}

ResolveResult MemoryTracker::Resolve(const void* ptr, Category category,
                                     uint8_t flags) {
  Shard& shard = ShardFor(ptr);
  std::lock_guard<SpinLock> guard(shard.lock);
  const size_t index = shard.Find(ptr);
  if (index == shard.slots.size()) return ResolveResult::kNotFound;
  Slot& slot = shard.slots[index];
  if (slot.flags & kFlagOwned) {
    return slot.category == category ? ResolveResult::kAlready
                                     : ResolveResult::kConflict;
  }
  shard.Move(slot, category);
  slot.flags |= kFlagOwned | flags;
  return ResolveResult::kResolved;
}

int64_t MemoryTracker::ResolvePending(Phase phase, int32_t step,
                                      Category category) {
  const int64_t begin = begin_seq_.load();
  int64_t bytes = 0;
  for (Shard& shard : shards_) {
    std::lock_guard<SpinLock> guard(shard.lock);
    for (Slot& slot : shard.slots) {
      if (slot.ptr != nullptr && slot.category == Category::kPending &&
          slot.seq >= begin && slot.phase == phase && slot.step == step) {
        shard.Move(slot, category);
        bytes += slot.bytes;
      }
    }
  }
  return bytes;
}

Category MemoryTracker::CategoryOf(const void* ptr) const {
  const Shard& shard = ShardFor(ptr);
  std::lock_guard<SpinLock> guard(shard.lock);
  const size_t index = shard.Find(ptr);
  return index == shard.slots.size() ? Category::kUnattributed
                                     : shard.slots[index].category;
}

Capture MemoryTracker::EndSession() {
  Capture capture;
  capture.begin_seq = begin_seq_.load();
  logging_.store(false);
  for (Shard& shard : shards_) {
    std::lock_guard<SpinLock> guard(shard.lock);
    capture.lifetimes.insert(capture.lifetimes.end(), shard.log.begin(),
                             shard.log.end());
    shard.log.clear();
    for (Slot& slot : shard.slots) {
      if (slot.ptr == nullptr || slot.seq < capture.begin_seq) continue;
      if (slot.category == Category::kPending) {
        shard.Move(slot, Category::kUnattributed);
      }
      capture.lifetimes.push_back(
          Lifetime{slot.seq, kLive, slot.bytes, slot.step, slot.phase,
                   slot.category, static_cast<uint8_t>(slot.flags & ~kFlagOwned)});
    }
  }
  capture.end_seq = seq_.load();
  capture.marks = std::move(marks_);
  marks_.clear();
  return capture;
}

std::array<Stat, kNumCategorySlots> MemoryTracker::CategoryCounters() const {
  std::array<Stat, kNumCategorySlots> stats{};
  for (const Shard& shard : shards_) {
    std::lock_guard<SpinLock> guard(shard.lock);
    for (int c = 0; c < kNumCategorySlots; ++c) {
      stats[c].allocated += shard.allocated[c];
      stats[c].freed += shard.freed[c];
    }
  }
  for (Stat& stat : stats) stat.current = stat.allocated - stat.freed;
  return stats;
}

Stat MemoryTracker::Total() const {
  Stat total;
  for (const Stat& stat : CategoryCounters()) {
    total.allocated += stat.allocated;
    total.freed += stat.freed;
  }
  total.current = total_current_.load();
  total.peak = total_peak_.load();
  return total;
}

int64_t MemoryTracker::allocation_count() const {
  int64_t count = 0;
  for (const Shard& shard : shards_) {
    std::lock_guard<SpinLock> guard(shard.lock);
    count += shard.count;
  }
  return count;
}

}  // namespace memprof
