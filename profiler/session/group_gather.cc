#include "profiler/session/group_gather.h"

#include <algorithm>

#include <torch/torch.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

namespace memprof {

std::vector<std::string> AllGatherStrings(c10d::ProcessGroup& group,
                                          const std::string& value) {
  const int size = group.getSize();
  // Lengths first, then the bytes padded to the longest.
  std::vector<at::Tensor> length{
      torch::tensor({static_cast<int64_t>(value.size())}, torch::kLong)};
  std::vector<std::vector<at::Tensor>> lengths(1);
  for (int r = 0; r < size; ++r) {
    lengths[0].push_back(torch::empty({1}, torch::kLong));
  }
  group.allgather(lengths, length)->wait();
  int64_t longest = 0;
  for (const at::Tensor& t : lengths[0]) {
    longest = std::max(longest, t.item<int64_t>());
  }
  at::Tensor mine = torch::zeros({std::max<int64_t>(longest, 1)}, torch::kByte);
  std::copy(value.begin(), value.end(), mine.data_ptr<uint8_t>());
  std::vector<at::Tensor> input{mine};
  std::vector<std::vector<at::Tensor>> outputs(1);
  for (int r = 0; r < size; ++r) outputs[0].push_back(torch::empty_like(mine));
  group.allgather(outputs, input)->wait();
  std::vector<std::string> values;
  for (int r = 0; r < size; ++r) {
    const auto* bytes = outputs[0][r].data_ptr<uint8_t>();
    values.emplace_back(reinterpret_cast<const char*>(bytes),
                        lengths[0][r].item<int64_t>());
  }
  return values;
}

}  // namespace memprof
