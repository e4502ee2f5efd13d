#include "profiler/base/run_categories.h"

namespace memprof {
namespace {

bool CanFill(const RunConfig& config, Category c) {
  switch (c) {
    case Category::kWeightCasts:
      return config.train.dtype == "bf16-autocast";
    case Category::kDdpBuckets:
      return !config.ddp.gradient_as_bucket_view;
    case Category::kOptimizerState:
      return KeepsMoments(config.train) || config.train.momentum > 0;
    default:
      return true;
  }
}

}  // namespace

std::vector<Category> CategoriesOf(const RunConfig& config) {
  return CategoriesToShow(config, [](Category) { return false; });
}

std::vector<Category> CategoriesToShow(
    const RunConfig& config, const std::function<bool(Category)>& holds_bytes) {
  std::vector<Category> out;
  for (Category c : kAllCategories) {
    if (CanFill(config, c) || holds_bytes(c)) out.push_back(c);
  }
  return out;
}

}  // namespace memprof
