// Where this process sits in a data-parallel job, from the environment that
// torchrun (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), srun
// (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID) or mpirun
// (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK)
// set. MASTER_ADDR and MASTER_PORT are always needed for the rendezvous.
#pragma once

#include <optional>
#include <string>

namespace memprof {

struct RankTopology {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  bool launched_by_memprof = false;  // a child of `memprof profile`'s launcher
};

// nullopt when no launcher variables are set. Throws InputError naming the
// variable when they are inconsistent or incomplete.
std::optional<RankTopology> TopologyFromEnvironment();

// Exit code a launched rank 0 uses when the rendezvous port was taken, so
// the launcher retries on another port. Not seen by users.
inline constexpr int kExitPortBusy = 4;

// Rendezvous ports tried, by the launcher and by a rank 0 that picks its own,
// before a busy port is an error.
inline constexpr int kPortAttempts = 3;

}  // namespace memprof
