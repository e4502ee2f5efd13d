#include "profiler/capture/cuda_backend.h"

#include <stdexcept>

#if MEMPROF_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <cuda_runtime_api.h>
#endif

namespace memprof {

#if MEMPROF_WITH_CUDA
namespace {

namespace alloc = c10::cuda::CUDACachingAllocator;

void Check(cudaError_t error, const char* what) {
  if (error != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " +
                             cudaGetErrorString(error));
  }
}

}  // namespace

void SelectCudaDevice(int device) {
  Check(cudaSetDevice(device), "cudaSetDevice");
}

std::string CudaDeviceName(int device) {
  cudaDeviceProp props{};
  Check(cudaGetDeviceProperties(&props, device), "cudaGetDeviceProperties");
  return props.name;
}

void AttachCudaTrace(CudaTrace& trace) {
  alloc::attachAllocatorTraceTracker(
      [&trace](const c10::CachingDeviceAllocator::TraceEntry& entry) {
        trace.Apply(entry);
      });
}

CudaAllocatorStats ReadCudaAllocatorStats(int device) {
  const c10::CachingDeviceAllocator::DeviceStats stats =
      alloc::getDeviceStats(static_cast<c10::DeviceIndex>(device));
  constexpr auto kAll =
      static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE);
  CudaAllocatorStats out;
  out.now.requested = stats.requested_bytes[kAll].current;
  out.now.allocated = stats.allocated_bytes[kAll].current;
  out.now.reserved = stats.reserved_bytes[kAll].current;
  out.now.inactive_split = stats.inactive_split_bytes[kAll].current;
  out.peak_allocated = stats.allocated_bytes[kAll].peak;
  out.peak_reserved = stats.reserved_bytes[kAll].peak;
  return out;
}

void ResetCudaPeaks(int device) {
  alloc::resetPeakStats(static_cast<c10::DeviceIndex>(device));
}

CudaDeviceMemory ReadCudaDeviceMemory() {
  size_t free_bytes = 0, total_bytes = 0;
  Check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  return {static_cast<int64_t>(free_bytes), static_cast<int64_t>(total_bytes)};
}

void SetCudaMemoryFraction(int device, double fraction) {
  alloc::setMemoryFraction(fraction, static_cast<c10::DeviceIndex>(device));
}

#else
namespace {

[[noreturn]] void NoCuda() {
  throw std::runtime_error(
      "memprof was built without CUDA (MEMPROF_CUDA=OFF, or a LibTorch "
      "without CUDA); build it against a CUDA LibTorch to train on a GPU");
}

}  // namespace

void SelectCudaDevice(int) { NoCuda(); }
std::string CudaDeviceName(int) { NoCuda(); }
void AttachCudaTrace(CudaTrace&) { NoCuda(); }
CudaAllocatorStats ReadCudaAllocatorStats(int) { NoCuda(); }
void ResetCudaPeaks(int) { NoCuda(); }
CudaDeviceMemory ReadCudaDeviceMemory() { NoCuda(); }
void SetCudaMemoryFraction(int, double) { NoCuda(); }
#endif

}  // namespace memprof
