// `memprof profile`: one rank of a job when torchrun/srun/mpirun variables
// are set, else the local launcher for --world-size N > 1, else a job of
// one rank. Each rank writes rank-<r>.json; rank 0 gathers every report
// through the process group, writes summary.json and prints the table.
#pragma once

#include "profiler/capture/cuda_device.h"
#include "profiler/cli/config_cli.h"

namespace memprof {

// Before any training: with train.device cuda, a GPU must be there
// (`cuda`), and NCCL needs one GPU per local rank (it refuses two ranks on
// one device; Gloo shares). Throws InputError naming the flag and the
// remedy.
void CheckDevices(const RunConfig& config, int local_ranks,
                  const CudaDeviceStatus& cuda);

// Returns the process exit code; throws InputError / RunFailure.
int RunProfileCommand(const ProfileArgs& args);

}  // namespace memprof
