// The redundancy audit: is a rank's copy of a category bit-identical on
// every rank, and how many bytes does the group hold in duplicate? Plain
// data parallelism replicates weights and optimizer state on every rank;
// this proves it and prices it.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "profiler/base/category.h"

namespace memprof {

class ProcessGroup;

struct Redundancy {
  Category category = Category::kWeights;
  int64_t bytes = 0;                  // this rank's copy
  std::vector<uint64_t> rank_hashes;  // XXH3-64 of each rank's bytes
  bool identical_across_ranks = false;
  // (N - 1) * bytes when identical on all N ranks, else 0.
  int64_t redundant_bytes = 0;
};

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
