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
  // Rank 0 of a local job: the store's listening socket, opened by the
  // launcher (MEMPROF_STORE_FD; Note [Store socket]); -1 when rank 0 opens
  // its own.
  int store_fd = -1;
  // Under torchrun the agent already serves a store at MASTER_PORT
  // (TORCHELASTIC_USE_AGENT_STORE=True): every rank is its client, and
  // memprof's keys live under this prefix (one per restart). Empty: rank 0
  // serves the store.
  std::string agent_store_prefix;
};

// nullopt when no launcher variables are set. Throws InputError naming the
// variable when they are inconsistent or incomplete.
std::optional<RankTopology> TopologyFromEnvironment();

}  // namespace memprof
