#include "profiler/train/redundancy.h"

#include <xxhash.h>

#include <algorithm>
#include <memory>

#include "profiler/train/ddp_engine.h"

namespace memprof {

uint64_t HashTensors(const std::vector<torch::Tensor>& tensors) {
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(
      XXH3_createState(), &XXH3_freeState);
  TORCH_CHECK(state != nullptr, "XXH3_createState failed");
  XXH3_64bits_reset(state.get());
  for (const torch::Tensor& tensor : tensors) {
    if (!tensor.defined()) continue;
    // A GPU tensor is hashed from a host copy.
    const torch::Tensor dense = tensor.detach().to(torch::kCPU).contiguous();
    XXH3_64bits_update(state.get(), dense.data_ptr(), dense.nbytes());
  }
  return XXH3_64bits_digest(state.get());
}

int64_t TensorBytes(const std::vector<torch::Tensor>& tensors) {
  int64_t bytes = 0;
  for (const torch::Tensor& t : tensors) {
    if (t.defined()) bytes += static_cast<int64_t>(t.nbytes());
  }
  return bytes;
}

Redundancy CompareAcrossRanks(Category category, int64_t bytes,
                              std::vector<uint64_t> rank_hashes) {
  Redundancy out;
  out.category = category;
  out.bytes = bytes;
  out.identical_across_ranks =
      !rank_hashes.empty() &&
      std::all_of(rank_hashes.begin(), rank_hashes.end(),
                  [&](uint64_t h) { return h == rank_hashes.front(); });
  out.redundant_bytes =
      out.identical_across_ranks
          ? static_cast<int64_t>(rank_hashes.size() - 1) * bytes
          : 0;
  out.rank_hashes = std::move(rank_hashes);
  return out;
}

Redundancy AuditAcrossRanks(ProcessGroup& group, Category category,
                            const std::vector<torch::Tensor>& tensors) {
  const uint64_t hash = HashTensors(tensors);
  std::vector<uint64_t> hashes;
  for (const std::string& text : group.AllGather(std::to_string(hash))) {
    hashes.push_back(std::stoull(text));
  }
  return CompareAcrossRanks(category, TensorBytes(tensors), std::move(hashes));
}

}  // namespace memprof
