// The CPU backend of the allocator hook: a c10::Allocator that wraps the
// default CPU allocator and reports every block to MemoryTracker.
#pragma once

#include <c10/core/Allocator.h>

namespace memprof {

// Installs the hook as the CPU allocator (c10::SetCPUAllocator, top
// priority). Call before any tensor is made: blocks allocated earlier are
// not seen. Idempotent.
void InstallCpuHook();
bool CpuHookInstalled();

// The hook allocator itself (static storage: it outlives every tensor).
// Usable directly, e.g. by benchmarks, without installing it.
c10::Allocator* CpuHookAllocator();

}  // namespace memprof
