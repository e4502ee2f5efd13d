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

// Note [Local memory]
// A run started here (one rank, or the local launcher's N) holds its
// tensors in this machine's memory: before any model is built, N times
// (the busiest rank's predicted peak, or --memory-limit when smaller, which
// the hook enforces, + 150 MiB for the process; on a GPU the process alone)
// must be within what the kernel reports available (`available_bytes`;
// 0: unknown, not checked). Else InputError naming the figures and the
// remedies, --skip-memory-check among them. Ranks started by torchrun,
// srun or mpirun are not checked.
inline constexpr int64_t kRankProcessBytes = int64_t{150} << 20;
void CheckLocalMemory(const RunConfig& config, int64_t memory_limit_bytes,
                      int64_t available_bytes);

// Bytes the kernel says can still be given out (MemAvailable); 0 when
// /proc/meminfo cannot be read.
int64_t AvailableMemoryBytes();

// Returns the process exit code; throws InputError / RunFailure.
int RunProfileCommand(const ProfileArgs& args);

}  // namespace memprof
