#include "profiler/capture/cuda_backend.h"

#include <stdexcept>

#if MEMPROF_WITH_CUDA
#include <dlfcn.h>

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

// NVML's C interface, as its documentation gives it (the driver ships the
// library, the toolkit here no header): 0 is NVML_SUCCESS.
struct NvmlMemory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
using NvmlInit = int (*)();
using NvmlHandleByPciBusId = int (*)(const char*, void**);
using NvmlMemoryInfo = int (*)(void*, NvmlMemory*);

int64_t DeviceUsedWithoutContext(int device) {
  char bus_id[32] = {};
  // The runtime names the device without making a context.
  if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device) != cudaSuccess) {
    return -1;
  }
  void* nvml = ::dlopen("libnvidia-ml.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (nvml == nullptr) return -1;
  const auto init = reinterpret_cast<NvmlInit>(::dlsym(nvml, "nvmlInit_v2"));
  const auto shutdown =
      reinterpret_cast<NvmlInit>(::dlsym(nvml, "nvmlShutdown"));
  const auto handle_of = reinterpret_cast<NvmlHandleByPciBusId>(
      ::dlsym(nvml, "nvmlDeviceGetHandleByPciBusId_v2"));
  const auto memory_of = reinterpret_cast<NvmlMemoryInfo>(
      ::dlsym(nvml, "nvmlDeviceGetMemoryInfo"));
  int64_t used = -1;
  if (init && shutdown && handle_of && memory_of && init() == 0) {
    void* handle = nullptr;
    NvmlMemory memory{};
    if (handle_of(bus_id, &handle) == 0 && memory_of(handle, &memory) == 0) {
      used = static_cast<int64_t>(memory.used);
    }
    shutdown();
  }
  ::dlclose(nvml);
  return used;
}

#else
namespace {

[[noreturn]] void NoCuda() {
  throw std::runtime_error(
      "memprof was built without CUDA (MEMPROF_CUDA=OFF, no CUDA toolkit "
      "where it was built, or a LibTorch without CUDA); build it with the "
      "CUDA 13 toolkit, against a CUDA LibTorch, to train on a GPU");
}

}  // namespace

void SelectCudaDevice(int) { NoCuda(); }
std::string CudaDeviceName(int) { NoCuda(); }
void AttachCudaTrace(CudaTrace&) { NoCuda(); }
CudaAllocatorStats ReadCudaAllocatorStats(int) { NoCuda(); }
void ResetCudaPeaks(int) { NoCuda(); }
CudaDeviceMemory ReadCudaDeviceMemory() { NoCuda(); }
int64_t DeviceUsedWithoutContext(int) { NoCuda(); }
void SetCudaMemoryFraction(int, double) { NoCuda(); }
#endif

}  // namespace memprof
