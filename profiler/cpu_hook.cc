#include "profiler/cpu_hook.h"

#include <atomic>

#include <c10/core/CPUAllocator.h>

#include "profiler/memory_tracker.h"

namespace memprof {
namespace {

// Our DataPtr's context is the data pointer itself (the tracker's key); the
// base allocator's own context and deleter are kept in the tracker's slot,
// so a block costs no heap allocation of its own (Note [Hook cost]).
void HookDelete(void* ptr) {
  const BackendHandle base = MemoryTracker::Get().RecordFree(ptr);
  if (base.deleter != nullptr) base.deleter(base.ctx);
}

class CpuHook final : public c10::Allocator {
 public:
  explicit CpuHook(c10::Allocator* base) : base_(base) {}

  c10::DataPtr allocate(size_t bytes) const override {
    c10::DataPtr block = base_->allocate(bytes);
    void* data = block.get();
    if (data == nullptr) return block;  // zero-byte storages: nothing to see
    const c10::Device device = block.device();
    const BackendHandle base{block.get_context(), block.get_deleter()};
    block.release_context();
    MemoryTracker::Get().RecordAlloc(data, static_cast<int64_t>(bytes), base);
    return c10::DataPtr(data, data, &HookDelete, device);
  }

  // Context == data, so raw_allocate/raw_deallocate work through us.
  c10::DeleterFnPtr raw_deleter() const override { return &HookDelete; }

 private:
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
