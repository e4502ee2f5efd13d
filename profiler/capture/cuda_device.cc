#include "profiler/capture/cuda_device.h"

#if MEMPROF_WITH_CUDA
#include <dlfcn.h>

#include <cuda_runtime_api.h>
#endif

namespace memprof {
namespace {

#if MEMPROF_WITH_CUDA
std::string MiB(size_t bytes) {
  return std::to_string(bytes / (1024 * 1024)) + " MiB";
}

CudaDeviceStatus Probe() {
  CudaDeviceStatus s;
  s.compiled = true;
  // The runtime loads the driver library itself; without one it reports
  // only "insufficient driver", so look for the library first.
  void* driver = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (driver == nullptr) {
    s.status = "no NVIDIA driver (libcuda.so.1 not found)";
    return s;
  }
  ::dlclose(driver);
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    s.status = std::string("CUDA runtime: ") + cudaGetErrorString(error);
    return s;
  }
  s.devices = count;
  s.available = count > 0;
  if (count == 0) {
    s.status = "no CUDA device";
    return s;
  }
  cudaDeviceProp props{};
  if (cudaGetDeviceProperties(&props, 0) == cudaSuccess) {
    s.status = std::to_string(count) + " x " + props.name + ", " +
               MiB(props.totalGlobalMem);
  } else {
    s.status = std::to_string(count) + " CUDA device(s)";
  }
  return s;
}
#else
CudaDeviceStatus Probe() {
  CudaDeviceStatus s;
  s.status =
      "memprof built without CUDA (MEMPROF_CUDA=OFF, no CUDA toolkit "
      "where it was built, or a LibTorch without CUDA)";
  return s;
}
#endif

}  // namespace

const CudaDeviceStatus& ProbeCudaDevice() {
  static const CudaDeviceStatus status = Probe();
  return status;
}

}  // namespace memprof
