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

// Note [Local world size]
// --world-size N starts N processes on this machine, each with LibTorch
// loaded (150 MB resident or more before its first tensor; about 500 MB
// when the CUDA libraries are linked in), however small the model. So N
// is bounded before anything is forked: at most 8 ranks per core, and
// their memory by CheckLocalMemory. Ranks started by torchrun, srun or
// mpirun are spread over machines by their launcher and are not bounded
// here.
constexpr int64_t kRanksPerCore = 8;

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
}

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

void CheckLocalMemory(const RunConfig& config, int64_t memory_limit_bytes,
                      int64_t available_bytes) {
  if (available_bytes <= 0) return;  // unknown: nothing to check against
  const int64_t n = config.ddp.world_size;
  // On a GPU the tensors are the device's; the host holds the process.
  int64_t tensors = 0;
  if (config.train.device == "cpu") {
    tensors = PredictBusiestRank(config).Peak().Total();
    if (memory_limit_bytes > 0) tensors = std::min(tensors, memory_limit_bytes);
  }
  const int64_t per_rank = tensors + kRankProcessBytes;
  if (per_rank <= available_bytes / n) return;
  const int64_t room = available_bytes / n - kRankProcessBytes;
  const std::string what =
      config.train.device == "cpu"
          ? std::string(memory_limit_bytes > 0 && tensors == memory_limit_bytes
                            ? "the --memory-limit"
                            : "the predicted peak") +
                " + 150 MiB for the process"
          : "150 MiB for the process; the tensors are on the GPU";
  const std::string ranks = n == 1 ? "one rank of " + HumanBytes(per_rank)
                                   : std::to_string(n) + " ranks of " +
                                         HumanBytes(per_rank) + " each";
  throw InputError(
      config.model + " at micro-batch " + std::to_string(MicroBatch(config)) +
      ": " + ranks + " (" + what + ") need" + (n == 1 ? "s" : "") +
      " more than the " + HumanBytes(available_bytes) +
      " this machine has available, and would take it from everything else "
      "on it; " +
      (room > 0 && config.train.device == "cpu"
           ? "lower the micro-batch (memprof fit --budget " + HumanBytes(room) +
                 " names what fits), "
           : std::string()) +
      "emulate a smaller device with --memory-limit, " +
      (n > 1 ? "run fewer ranks here or across machines with torchrun, srun "
               "or mpirun, "
             : "") +
      "or pass --skip-memory-check to start anyway");
}

}  // namespace memprof
