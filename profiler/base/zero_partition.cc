#include "profiler/base/zero_partition.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <queue>
#include <stdexcept>
#include <utility>

namespace memprof {

std::vector<int> PartitionParameters(const std::vector<int64_t>& bytes,
                                     int world_size) {
  if (world_size < 1) throw std::invalid_argument("world_size < 1");
  std::vector<size_t> order(bytes.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return bytes[a] > bytes[b]; });
  // The least-loaded rank, ties to the lowest: (load, rank) least first.
  // The ranks given no parameter yet all hold 0 bytes; the lowest of them,
  // `fresh`, stands for them all, so the time grows with the parameters,
  // not the ranks.
  using Load = std::pair<int64_t, int>;
  std::priority_queue<Load, std::vector<Load>, std::greater<Load>> loaded;
  int fresh = 0;
  std::vector<int> owners(bytes.size(), 0);
  for (size_t i : order) {
    Load least;
    if (fresh < world_size &&
        (loaded.empty() || Load{0, fresh} < loaded.top())) {
      least = {0, fresh++};
    } else {
      least = loaded.top();
      loaded.pop();
    }
    owners[i] = least.second;
    loaded.push({least.first + bytes[i], least.second});
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
