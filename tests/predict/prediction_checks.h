// What must hold between a rank report's measured figures and its
// prediction: model state to the byte, activations within 3%, the
// steady-state peak within 5%.
#pragma once

#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "profiler/report/rank_report.h"

namespace memprof {

inline void ExpectPredictionHolds(const RankReport& rank,
                                  const std::string& label) {
  SCOPED_TRACE(label + ", rank " + std::to_string(rank.context.rank));
  for (Category exact :
       {Category::kWeights, Category::kGradients, Category::kOptimizerState,
        Category::kDdpBuckets, Category::kInputs, Category::kUnattributed}) {
    const CategoryFigures& f = rank.Of(exact);
    EXPECT_EQ(f.peak_bytes, f.predicted_bytes) << CategoryName(exact);
    EXPECT_EQ(f.measured_bytes, f.peak_bytes)
        << CategoryName(exact) << " is constant through the steady state";
  }
  EXPECT_EQ(rank.parameters, rank.predicted_parameters);
  const int64_t activations = rank.Of(Category::kActivations).peak_bytes;
  const int64_t predicted = rank.Of(Category::kActivations).predicted_bytes;
  EXPECT_GT(predicted, 0);
  EXPECT_LE(std::llabs(activations - predicted), predicted * 3 / 100)
      << "activations: measured " << activations << ", predicted " << predicted;
  const int64_t peak = rank.peak.total_bytes;
  const int64_t peak_predicted = rank.predicted_peak.total_bytes;
  EXPECT_LE(std::llabs(peak - peak_predicted), peak_predicted * 5 / 100)
      << "peak: measured " << peak << " in " << PhaseName(rank.peak.phase)
      << ", predicted " << peak_predicted;
}

}  // namespace memprof
