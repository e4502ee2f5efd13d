// The redundancy audit: is a rank's copy of a category bit-identical on
// every rank, and how many bytes does the group hold in duplicate? Plain
// data parallelism replicates weights and optimizer state on every rank;
// this proves it and prices it.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "profiler/base/category.h"
#include "profiler/session/redundancy_verdict.h"

namespace memprof {

class ProcessGroup;

// XXH3-64 over the bytes of each tensor, in order.
uint64_t HashTensors(const std::vector<torch::Tensor>& tensors);
int64_t TensorBytes(const std::vector<torch::Tensor>& tensors);

// Pure: the verdict from every rank's hash and this rank's bytes.
Redundancy CompareAcrossRanks(Category category, int64_t bytes,
                              std::vector<uint64_t> rank_hashes);

// Collective: every rank calls it with the same categories in order.
Redundancy AuditAcrossRanks(ProcessGroup& group, Category category,
                            const std::vector<torch::Tensor>& tensors);

}  // namespace memprof
