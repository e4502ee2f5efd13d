#include "profiler/base/run_categories.h"

#include <algorithm>

#include <gtest/gtest.h>

namespace memprof {
namespace {

bool Has(const std::vector<Category>& categories, Category c) {
  return std::find(categories.begin(), categories.end(), c) != categories.end();
}

TEST(RunCategories, LeavesOutWhatTheConfigCannotFill) {
  RunConfig config;  // float32, adam, plain buckets
  std::vector<Category> shown = CategoriesOf(config);
  EXPECT_FALSE(Has(shown, Category::kWeightCasts));
  EXPECT_TRUE(Has(shown, Category::kDdpBuckets));
  EXPECT_TRUE(Has(shown, Category::kOptimizerState));
  EXPECT_TRUE(Has(shown, Category::kUnattributed));

  config.train.dtype = "bf16-autocast";
  config.ddp.gradient_as_bucket_view = true;
  config.train.optimizer = "sgd";
  shown = CategoriesOf(config);
  EXPECT_TRUE(Has(shown, Category::kWeightCasts));
  EXPECT_FALSE(Has(shown, Category::kDdpBuckets));
  EXPECT_FALSE(Has(shown, Category::kOptimizerState));

  config.train.momentum = 0.9;
  EXPECT_TRUE(Has(CategoriesOf(config), Category::kOptimizerState));
}

TEST(RunCategories, ACategoryHoldingBytesIsShownAllTheSame) {
  RunConfig config;
  const std::vector<Category> shown = CategoriesToShow(
      config, [](Category c) { return c == Category::kWeightCasts; });
  ASSERT_TRUE(Has(shown, Category::kWeightCasts));
  // In category order: right after optimizer_state.
  EXPECT_EQ(shown[3], Category::kWeightCasts);
}

}  // namespace
}  // namespace memprof
