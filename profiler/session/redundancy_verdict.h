// The redundancy audit's verdict for one category (redundancy.h computes
// it): plain data, LibTorch-free, so that a rank's report can be built
// where LibTorch is not loaded.
#pragma once

#include <cstdint>
#include <vector>

#include "profiler/base/category.h"

namespace memprof {

struct Redundancy {
  Category category = Category::kWeights;
  int64_t bytes = 0;                  // this rank's copy
  std::vector<uint64_t> rank_hashes;  // XXH3-64 of each rank's bytes
  bool identical_across_ranks = false;
  // (N - 1) * bytes when identical on all N ranks, else 0.
  int64_t redundant_bytes = 0;
};

}  // namespace memprof
