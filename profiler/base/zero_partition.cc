#include "profiler/base/zero_partition.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace memprof {

std::vector<int> PartitionParameters(const std::vector<int64_t>& bytes,
                                     int world_size) {
  if (world_size < 1) throw std::invalid_argument("world_size < 1");
  std::vector<size_t> order(bytes.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return bytes[a] > bytes[b]; });
  std::vector<int64_t> load(static_cast<size_t>(world_size), 0);
  std::vector<int> owners(bytes.size(), 0);
  for (size_t i : order) {
    const auto least = std::min_element(load.begin(), load.end());
    owners[i] = static_cast<int>(least - load.begin());
    *least += bytes[i];
  }
  return owners;
}

std::vector<int64_t> OwnedBytes(const std::vector<int64_t>& bytes,
                                const std::vector<int>& owners,
                                int world_size) {
  std::vector<int64_t> owned(static_cast<size_t>(world_size), 0);
  for (size_t i = 0; i < bytes.size(); ++i) owned[owners[i]] += bytes[i];
  return owned;
}

}  // namespace memprof
