// Note [ZeRO-1 partition]
// Under ddp.zero_stage 1 each parameter's optimizer state lives on one
// rank, its owner, as torch.distributed.optim.ZeroRedundancyOptimizer
// partitions them: parameters taken largest first (ties: the earlier in
// parameters() order), each given to the rank that owns the fewest bytes
// so far (ties: the lowest rank) — the greedy longest-first rule, within
// 4/3 of the best balance. Every rank computes the same partition from the
// parameters' sizes alone, and so does the prediction from the size table,
// whose parameter rows are in parameters() order. Torch-free.
#pragma once

#include <cstdint>
#include <vector>

namespace memprof {

// The owning rank of each parameter, from the parameters' sizes in bytes
// (in parameters() order) and the number of ranks (>= 1).
std::vector<int> PartitionParameters(const std::vector<int64_t>& bytes,
                                     int world_size);

// Bytes each rank owns under `owners`.
std::vector<int64_t> OwnedBytes(const std::vector<int64_t>& bytes,
                                const std::vector<int>& owners, int world_size);

}  // namespace memprof
