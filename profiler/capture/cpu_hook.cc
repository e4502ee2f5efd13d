#include "profiler/capture/cpu_hook.h"

#include <unistd.h>

#include <atomic>
#include <string>

#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>

#include "profiler/base/human_bytes.h"
#include "profiler/capture/memory_tracker.h"

namespace memprof {
namespace {

// Note [CPU hook deleters]
// c10's default CPU allocator returns DataPtr{data, ctx = data, deleter D}
// with the same D for every block. The hook's DataPtr keeps ctx = data (the
// tracker's key) and its own deleter, and frees through D afterwards: no
// per-block memory at all. A block whose context or deleter differs (another
// base allocator) keeps both in a small heap record instead.
c10::DeleterFnPtr g_base_deleter = nullptr;  // D, set once by the hook
// MemoryTracker::Get(), set once by the hook: no static-local guard check
// on the hot path.
MemoryTracker* g_tracker = nullptr;

// Also the raw_deleter(): raw_deallocate(nullptr) (oneDNN frees the empty
// buffer of a zero-byte raw_allocate that way) is not a block.
void HookDelete(void* data) {
  if (data != nullptr) g_tracker->RecordFree(data);
  g_base_deleter(data);
}

struct ForeignBlock {
  void* data;
  void* ctx;
  c10::DeleterFnPtr deleter;
};

void HookDeleteForeign(void* record) {
  const ForeignBlock* block = static_cast<ForeignBlock*>(record);
  g_tracker->RecordFree(block->data);
  block->deleter(block->ctx);
  delete block;
}

// The error LibTorch's device allocators raise when a device is full.
[[noreturn]] void ThrowOutOfMemory(const OutOfMemory& failure, int64_t bytes) {
  C10_THROW_ERROR(OutOfMemoryError,
                  "out of memory under memprof's memory limit of " +
                      HumanBytes(failure.limit_bytes) + ". Tried to allocate " +
                      HumanBytes(bytes) + " (the first refusal: " +
                      HumanBytes(failure.requested_bytes) + " with " +
                      HumanBytes(failure.live_bytes) + " live, in " +
                      std::string(PhaseName(failure.phase)) + " of step " +
                      std::to_string(failure.step) + ")");
}

class CpuHook final : public c10::Allocator {
 public:
  explicit CpuHook(c10::Allocator* base) : base_(base) {
    c10::DataPtr probe = base_->allocate(1);
    g_base_deleter = probe.get_deleter();
    g_tracker = &MemoryTracker::Get();
  }

  c10::DataPtr allocate(size_t bytes) override {
    c10::DataPtr block = Base(bytes);
    void* data = block.get();
    if (data == nullptr) return block;  // zero-byte storages: nothing to see
    if (C10_UNLIKELY(
            !g_tracker->RecordAlloc(data, static_cast<int64_t>(bytes)))) {
      Refused(bytes);  // the block goes back as `block` unwinds
    }
    // The common case swaps the deleter in place; every path returns
    // `block` itself, so it is built in the caller's return slot.
    if (C10_UNLIKELY(
            block.get_context() != data ||
            !block.compare_exchange_deleter(g_base_deleter, &HookDelete))) {
      MakeForeign(block);
    }
    return block;
  }

  // Context == data for our blocks, so raw_allocate/raw_deallocate work.
  c10::DeleterFnPtr raw_deleter() const override { return &HookDelete; }

  // Allocator::clone() copies through this; every block is plain memory.
  void copy_data(void* dest, const void* src,
                 std::size_t count) const override {
    default_copy_data(dest, src, count);
  }

 private:
  // Note [System refusals]
  // An allocation the system cannot serve (c10's alloc_cpu fails its
  // enforce, with a 29-frame stack) is an out-of-memory like the limit's:
  // recorded as a refusal by the system, against the machine's memory, so
  // that the rank stops and reports its breakdown at that moment (exit 3),
  // and raised as the same c10::OutOfMemoryError. (The try costs nothing
  // until something throws.)
  c10::DataPtr Base(size_t bytes) {
    try {
      return base_->allocate(bytes);
    } catch (const c10::Error&) {
      RefusedBySystem(bytes);
    }
  }

  [[noreturn]] C10_NOINLINE static void RefusedBySystem(size_t bytes) {
    const int64_t machine = static_cast<int64_t>(::sysconf(_SC_PHYS_PAGES)) *
                            ::sysconf(_SC_PAGESIZE);
    g_tracker->RecordRefusal(static_cast<int64_t>(bytes), machine,
                             /*by_system=*/true);
    C10_THROW_ERROR(OutOfMemoryError,
                    "out of memory: the system could not allocate " +
                        HumanBytes(static_cast<int64_t>(bytes)) +
                        " (this machine has " + HumanBytes(machine) +
                        " of memory)");
  }

  // Refused by the memory limit: the error LibTorch's device allocators
  // raise when a device is full.
  [[noreturn]] C10_NOINLINE static void Refused(size_t bytes) {
    ThrowOutOfMemory(g_tracker->out_of_memory(), static_cast<int64_t>(bytes));
  }

  // Another base allocator's block: its context and deleter are kept in a
  // heap record.
  C10_NOINLINE static void MakeForeign(c10::DataPtr& block) {
    void* data = block.get();
    const c10::Device device = block.device();
    void* ctx = block.get_context();
    const c10::DeleterFnPtr deleter = block.get_deleter();
    block.release_context();
    block = c10::DataPtr(data, new ForeignBlock{data, ctx, deleter},
                         &HookDeleteForeign, device);
  }

  c10::Allocator* base_;
};

std::atomic<bool> g_installed{false};

}  // namespace

c10::Allocator* CpuHookAllocator() {
  static CpuHook* hook = new CpuHook(c10::GetDefaultCPUAllocator());
  return hook;
}

void InstallCpuHook() {
  if (g_installed.exchange(true)) return;
  c10::SetCPUAllocator(CpuHookAllocator(), /*priority=*/255);
}

bool CpuHookInstalled() { return g_installed.load(); }

}  // namespace memprof
