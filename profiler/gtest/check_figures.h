// What a checked scope of memprof::testing measured (<memprof/gtest.h>):
// from its session's capture, the peak of all categories and of each
// category, the largest blocks live at each, and what was left live at the
// end and owned by nothing tracked. Pure arithmetic over the capture: no
// tensors.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "profiler/base/category.h"
#include "profiler/capture/memory_tracker.h"

namespace memprof {

// At most this many blocks are listed for a moment or for the leaks.
inline constexpr size_t kListedBlocks = 5;

// One block as a failure message shows it.
struct ListedBlock {
  int64_t bytes = 0;
  Category category = Category::kUnattributed;
  std::string scope;  // the innermost named scope at its allocation; ""
  Phase phase = Phase::kIdle;  // in force at its allocation
  int32_t step = 0;            // 0: outside a step
};

// The live blocks right after the allocation at `seq`.
struct Moment {
  int64_t seq = -1;  // -1: nothing was allocated
  int64_t total_bytes = 0;
  Phase phase = Phase::kIdle;
  int32_t step = 0;
  Breakdown bytes{};
  // The largest live blocks (of the moment's category, for a category's
  // peak), largest first, the earlier allocated first among equals.
  std::vector<ListedBlock> largest;
};

struct CheckFigures {
  Moment peak;  // the first moment of the highest total
  // Each category's own peak (the first moment of its highest live bytes),
  // its largest blocks of that category.
  std::array<Moment, kNumCategories> category_peaks;
  // Live at the end and owned by nothing tracked (IsOwned).
  int64_t leaked_bytes = 0;
  int64_t leaked_blocks = 0;
  std::vector<ListedBlock> largest_leaks;
};

// Weights, gradients, optimizer_state, ddp_buckets, inputs: what a tracked
// owner holds (Note [Block lifetimes]).
bool IsOwned(Category category);

// Reads the ended session's capture (twice: once for the moments, once for
// the blocks live at them).
CheckFigures FiguresOf(const Capture& capture);

}  // namespace memprof
