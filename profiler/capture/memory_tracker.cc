#include "profiler/capture/memory_tracker.h"

#include <immintrin.h>
#include <sys/mman.h>

#include <algorithm>
#include <mutex>
#include <new>
#include <stdexcept>
#include <thread>

#include <c10/util/Exception.h>

namespace memprof {
namespace {

constexpr size_t kInitialSlots = 1 << 12;

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
  const uint64_t tagged = Tag(bytes, Category::kPending, 0);
  if (seq_ >= log_from_seq_) {
    capture_.Append(RecordKind::kAlloc, seq_, reinterpret_cast<uintptr_t>(ptr),
                    tagged);
  }
  Insert(Slot{ptr, seq_++, tagged});
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
    capture_.Append(RecordKind::kFree, seq, reinterpret_cast<uintptr_t>(ptr),
                    slot.tagged);
    session_current_ -= BytesOfTag(slot.tagged);
  }
  EraseShifting(index);
}

void MemoryTracker::ArmLimitLocked() {
  refuse_above_ = logging_ && limit_bytes_ != 0 ? limit_bytes_ : kNoLimit;
}

void MemoryTracker::Retag(Slot& slot, Category to, uint8_t add_flags) {
  slot.tagged = Tag(BytesOfTag(slot.tagged), to,
                    static_cast<uint8_t>(FlagsOfTag(slot.tagged) | add_flags));
}

void MemoryTracker::RecordRefusal(int64_t bytes, int64_t limit_bytes,
                                  bool by_system) {
  std::lock_guard<SpinLock> guard(lock_);
  if (logging_) RefuseLocked(bytes, limit_bytes, by_system);
}

void MemoryTracker::RefuseLocked(int64_t bytes, int64_t limit_bytes,
                                 bool by_system) {
  const int64_t seq = seq_++;
  capture_.Append(
      RecordKind::kRefusal, seq,
      static_cast<uint64_t>(bytes) | static_cast<uint64_t>(by_system) << 63,
      static_cast<uint64_t>(limit_bytes));
  if (out_of_memory_.seq >= 0) return;  // the first refusal is the failure
  const PhaseMark& now = mark_;
  out_of_memory_ =
      OutOfMemory{seq,       bytes,    session_current_, limit_bytes,
                  now.phase, now.step, by_system};
  if (now.phase == Phase::kForward) {
    ResolvePendingSinceLocked(now.seq, Category::kActivations);
  } else if (now.phase == Phase::kModelInit) {
    ResolvePendingSinceLocked(now.seq, Category::kWeights);
  }
}

void MemoryTracker::BeginSession(const std::string& capture_path,
                                 const std::string& meta_json) {
  const int64_t unix_us =
      std::chrono::duration_cast<std::chrono::microseconds>(
          std::chrono::system_clock::now().time_since_epoch())
          .count();
  begin_time_ = std::chrono::steady_clock::now();
  std::lock_guard<SpinLock> guard(lock_);
  capture_.Open(capture_path, seq_, unix_us, meta_json);
  begin_seq_ = seq_;
  log_from_seq_ = seq_;
  logging_ = true;
  ArmLimitLocked();
  mark_ = PhaseMark{seq_, Phase::kIdle, 0, 0};
  AppendMarkLocked();
  begin_unix_us_ = unix_us;
  scope_ids_.clear();
  open_scopes_ = 0;
  session_current_ = 0;
  highest_seen_bytes_ = 0;
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
  mark_ = PhaseMark{seq_, phase, step, time_ns};
  highest_seen_bytes_ = std::max(highest_seen_bytes_, session_current_);
  if (logging_) AppendMarkLocked();
  // A spill failed since the last mark (Note [Capture file]).
  if (logging_ && !capture_.error().empty()) {
    throw std::runtime_error(capture_.error());
  }
  return seq_;
}

int64_t MemoryTracker::NextSeq() const {
  std::lock_guard<SpinLock> guard(lock_);
  return seq_;
}

void MemoryTracker::EnterScope(const std::string& name) {
  TORCH_CHECK(!name.empty() && name.find('\0') == std::string::npos,
              "expected a scope name without NUL characters, got '", name, "'");
  std::lock_guard<SpinLock> guard(lock_);
  if (!logging_) return;
  const auto [it, added] =
      scope_ids_.emplace(name, static_cast<uint32_t>(scope_ids_.size()));
  if (added) AppendScopeName(capture_, seq_, it->second, name);
  capture_.Append(RecordKind::kScopeEnter, seq_, it->second, 0);
  ++open_scopes_;
}

void MemoryTracker::ExitScope() {
  std::lock_guard<SpinLock> guard(lock_);
  // A scope opened before the session began is not the file's to close.
  if (!logging_ || open_scopes_ == 0) return;
  capture_.Append(RecordKind::kScopeExit, seq_, 0, 0);
  --open_scopes_;
}

ResolveResult MemoryTracker::Resolve(const void* ptr, Category category,
                                     uint8_t flags) {
  std::lock_guard<SpinLock> guard(lock_);
  const size_t index = Find(ptr);
  if (index > mask_) return ResolveResult::kNotFound;
  Slot& slot = slots_[index];
  if (slot.seq < begin_seq_) return ResolveResult::kBeforeSession;
  if (FlagsOfTag(slot.tagged) & kTagOwned) {
    return CategoryOfTag(slot.tagged) == category ? ResolveResult::kAlready
                                                  : ResolveResult::kConflict;
  }
  Retag(slot, category, static_cast<uint8_t>(kTagOwned | flags));
  if (slot.seq >= log_from_seq_) {
    capture_.Append(RecordKind::kResolve, seq_,
                    reinterpret_cast<uintptr_t>(ptr), slot.tagged);
  }
  return ResolveResult::kResolved;
}

int64_t MemoryTracker::ResolvePendingSince(int64_t seq, Category category) {
  std::lock_guard<SpinLock> guard(lock_);
  return ResolvePendingSinceLocked(seq, category);
}

int64_t MemoryTracker::ResolvePendingSinceLocked(int64_t seq,
                                                 Category category) {
  const int64_t from = std::max(seq, begin_seq_);
  if (logging_) {
    capture_.Append(RecordKind::kPending, seq_, static_cast<uint64_t>(from),
                    static_cast<uint64_t>(category));
  }
  int64_t bytes = 0;
  for (Slot& slot : table_) {
    if (slot.ptr != nullptr && slot.seq >= from &&
        CategoryOfTag(slot.tagged) == Category::kPending) {
      Retag(slot, category);
      bytes += BytesOfTag(slot.tagged);
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
  if (logging_) {
    capture_.Append(RecordKind::kEnd, seq_, 0,
                    static_cast<uint64_t>(capture.end_ns));
  }
  logging_ = false;
  log_from_seq_ = kLive;
  ArmLimitLocked();
  for (Slot& slot : table_) {
    if (slot.ptr != nullptr && slot.seq >= begin_seq_ &&
        CategoryOfTag(slot.tagged) == Category::kPending) {
      Retag(slot, Category::kUnattributed);
    }
  }
  const std::string path = capture_.path();
  const std::string error = capture_.error();
  const int fd = capture_.Finish();
  if (fd >= 0) capture.file = std::make_shared<const CaptureFile>(fd, path);
  if (!error.empty()) throw std::runtime_error(error);
  return capture;
}

void MemoryTracker::AppendMarkLocked() {
  capture_.Append(RecordKind::kMark, mark_.seq,
                  MarkWord(mark_.phase, mark_.step),
                  static_cast<uint64_t>(mark_.time_ns));
}

int64_t MemoryTracker::LiveBytes() const {
  std::lock_guard<SpinLock> guard(lock_);
  int64_t bytes = 0;
  for (const Slot& slot : table_) {
    if (slot.ptr != nullptr) bytes += BytesOfTag(slot.tagged);
  }
  return bytes;
}

MemoryTracker::Progress MemoryTracker::SessionProgress() {
  std::lock_guard<SpinLock> guard(lock_);
  highest_seen_bytes_ = std::max(highest_seen_bytes_, session_current_);
  return Progress{mark_.step, mark_.phase, session_current_,
                  highest_seen_bytes_};
}

}  // namespace memprof
