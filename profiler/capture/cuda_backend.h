// The CUDA runtime and the caching allocator's own interface, for a CUDA
// run: the trace tracker that feeds CudaTrace, the allocator's statistics
// (the self-check's other side), the device's memory as the driver sees it,
// and the memory fraction (--memory-limit on a GPU). In a build without
// CUDA every function throws std::runtime_error saying so.
#pragma once

#include <cstdint>
#include <string>

#include "profiler/base/cuda_allocator_model.h"
#include "profiler/capture/cuda_trace.h"

namespace memprof {

// The allocator's DeviceStats (aggregate pool) for one device.
struct CudaAllocatorStats {
  CudaAllocatorFigures now;
  int64_t peak_allocated = 0;  // since the last ResetCudaPeaks
  int64_t peak_reserved = 0;
};

// cudaMemGetInfo on the current device.
struct CudaDeviceMemory {
  int64_t free_bytes = 0;
  int64_t total_bytes = 0;
  int64_t used() const { return total_bytes - free_bytes; }
};

// Makes `device` current for this thread (and for the allocator).
void SelectCudaDevice(int device);
std::string CudaDeviceName(int device);
// Sends every later allocator event of every device to `trace`, which
// must outlive the process (the allocator keeps the callback). The
// allocator must be initialised (LibTorch's lazy CUDA init ran).
void AttachCudaTrace(CudaTrace& trace);
CudaAllocatorStats ReadCudaAllocatorStats(int device);
void ResetCudaPeaks(int device);
CudaDeviceMemory ReadCudaDeviceMemory();
// The device's used bytes as NVML reports them, which needs no CUDA
// context: the moment before this process made one. -1 when NVML (the
// driver's libnvidia-ml.so.1) cannot answer.
int64_t DeviceUsedWithoutContext(int device);
// The allocator refuses to reserve more than fraction x the device's total.
void SetCudaMemoryFraction(int device, double fraction);

}  // namespace memprof
