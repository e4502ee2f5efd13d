#include "profiler/base/category_palette.h"

namespace memprof {

int PaletteSlot(Category c) {
  switch (c) {
    case Category::kWeights:
      return 0;  // blue
    case Category::kGradients:
      return 1;  // orange
    case Category::kActivations:
      return 2;  // red
    case Category::kTemporaries:
      return 3;  // teal
    case Category::kOptimizerState:
      return 4;  // green
    case Category::kInputs:
      return 5;  // yellow
    case Category::kDdpBuckets:
      return 6;  // purple
    case Category::kWeightCasts:
      return 7;  // pink
    case Category::kUnattributed:
    case Category::kPending:
      break;
  }
  return 9;  // grey
}

std::array<std::string_view, kPaletteSlots> PaletteNames() {
  std::array<std::string_view, kPaletteSlots> names{};
  names[kUnknownPaletteSlot] = "unknown";
  for (Category c : kAllCategories) names[PaletteSlot(c)] = CategoryName(c);
  return names;
}

}  // namespace memprof
