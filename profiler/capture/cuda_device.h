// What this process can say about CUDA: whether memprof was built with its
// CUDA parts (MEMPROF_CUDA, from a LibTorch with CUDA) and, if so, whether a
// CUDA device is usable here, and if not, why. Asks the CUDA runtime
// directly, so a machine with no GPU and no driver gets a reason, not a
// LibTorch warning.
#pragma once

#include <string>

namespace memprof {

struct CudaDeviceStatus {
  bool compiled = false;   // memprof's CUDA parts are built in
  bool available = false;  // at least one device answered
  int devices = 0;
  std::string status;  // in words: the devices, or why there are none
};

// Probes once per process (the first call); later calls return the same.
const CudaDeviceStatus& ProbeCudaDevice();

}  // namespace memprof
