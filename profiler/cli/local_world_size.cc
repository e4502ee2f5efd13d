#include "profiler/cli/local_world_size.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

#include "profiler/base/errors.h"
#include "profiler/base/human_bytes.h"
#include "profiler/predict/prediction.h"

namespace memprof {
namespace {

// Bytes the kernel says can still be given out (MemAvailable); 0 when
// /proc/meminfo cannot be read.
int64_t AvailableMemoryBytes() {
  std::ifstream meminfo("/proc/meminfo");
  for (std::string line; std::getline(meminfo, line);) {
    std::istringstream fields(line);
    std::string name;
    int64_t kib = 0;
    if (fields >> name >> kib && name == "MemAvailable:") return kib * 1024;
  }
  return 0;
}

// Note [Local world size]
// --world-size N starts N processes on this machine, each with LibTorch
// loaded (150 MB resident or more before its first tensor; about 500 MB
// when the CUDA libraries are linked in), however small the model. So N
// is bounded before anything is forked: at most 8 ranks per core, and N
// times (the busiest rank's predicted peak + 150 MiB) within the memory
// the kernel reports available. Ranks started by torchrun, srun or mpirun
// are spread over machines by their launcher and are not bounded here.
constexpr int64_t kRanksPerCore = 8;
constexpr int64_t kRankProcessBytes = int64_t{150} << 20;

}  // namespace

void CheckLocalWorldSize(const RunConfig& config) {
  const int64_t n = config.ddp.world_size;
  const int64_t cores = std::max<long>(1, ::sysconf(_SC_NPROCESSORS_ONLN));
  if (n > kRanksPerCore * cores) {
    throw InputError(
        "--world-size " + std::to_string(n) + ": this machine has " +
        std::to_string(cores) + " cores, and memprof starts at most " +
        std::to_string(kRanksPerCore) + " local ranks per core (" +
        std::to_string(kRanksPerCore * cores) +
        "); start more ranks across machines with torchrun, srun or mpirun");
  }
  const int64_t available = AvailableMemoryBytes();
  const int64_t per_rank =
      PredictBusiestRank(config).Peak().Total() + kRankProcessBytes;
  if (available > 0 && per_rank > available / n) {
    throw InputError(
        "--world-size " + std::to_string(n) + ": " + std::to_string(n) +
        " ranks of about " + HumanBytes(per_rank) +
        " each (the predicted peak + 150 MiB for the process) need more "
        "than the " +
        HumanBytes(available) +
        " this machine has available; run fewer ranks here, or across "
        "machines with torchrun, srun or mpirun");
  }
}

}  // namespace memprof
