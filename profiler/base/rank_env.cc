#include "profiler/base/rank_env.h"

#include <cerrno>
#include <cstdlib>

#include "profiler/base/errors.h"

namespace memprof {
namespace {

std::optional<std::string> Env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

// Ranks, world sizes and descriptors: at most 2^24 (the largest world).
constexpr long kMaxCount = 1 << 24;
constexpr long kMaxPort = 65535;

int IntEnv(const char* name, const std::string& text, long min,
           long max = kMaxCount) {
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0' || errno == ERANGE || value < min ||
      value > max) {
    throw InputError(std::string("environment variable ") + name + "='" + text +
                     "' is not an integer in [" + std::to_string(min) + ", " +
                     std::to_string(max) + "]");
  }
  return static_cast<int>(value);
}

}  // namespace

std::optional<RankTopology> TopologyFromEnvironment() {
  // The first family present wins: torchrun, then Slurm, then Open MPI.
  const char* families[][3] = {
      {"RANK", "WORLD_SIZE", "LOCAL_RANK"},
      {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
       "OMPI_COMM_WORLD_LOCAL_RANK"}};
  for (const auto& family : families) {
    const auto rank = Env(family[0]);
    const auto size = Env(family[1]);
    if (!rank && !size) continue;
    if (!rank || !size) {
      throw InputError(std::string(rank ? family[1] : family[0]) +
                       " is not set but " + (rank ? family[0] : family[1]) +
                       " is; set both or neither");
    }
    RankTopology topology;
    topology.world_size = IntEnv(family[1], *size, 1);
    topology.rank = IntEnv(family[0], *rank, 0);
    if (topology.rank >= topology.world_size) {
      throw InputError(std::string(family[0]) + "=" + *rank + " is not below " +
                       family[1] + "=" + *size);
    }
    if (const auto local = Env(family[2])) {
      topology.local_rank = IntEnv(family[2], *local, 0);
    }
    const auto addr = Env("MASTER_ADDR");
    const auto port = Env("MASTER_PORT");
    if (!addr || !port) {
      throw InputError(std::string(family[0]) +
                       " is set but MASTER_ADDR/MASTER_PORT are not; export "
                       "the address and port of rank 0 for the rendezvous");
    }
    topology.master_addr = *addr;
    topology.master_port = IntEnv("MASTER_PORT", *port, 1, kMaxPort);
    topology.launched_by_memprof = Env("MEMPROF_LAUNCHED").has_value();
    if (topology.launched_by_memprof && topology.rank == 0) {
      if (const auto fd = Env("MEMPROF_STORE_FD")) {
        topology.store_fd = IntEnv("MEMPROF_STORE_FD", *fd, 0);
      }
    }
    if (Env("TORCHELASTIC_USE_AGENT_STORE").value_or("") == "True") {
      topology.agent_store_prefix =
          "memprof/attempt_" +
          Env("TORCHELASTIC_RESTART_COUNT").value_or(std::string("0"));
    }
    return topology;
  }
  return std::nullopt;
}

}  // namespace memprof
