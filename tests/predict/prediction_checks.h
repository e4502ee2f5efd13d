// What must hold between a rank report's measured figures and its
// prediction: model state and the weights' bfloat16 copies to the byte,
// activations within 3%, the steady-state peak within 5% (tighter bands
// where a model's table earns them: Llama's 1% and 3%), and in float32
// never more than 0.01% over the prediction.
//
// In bfloat16 (bf16-autocast, bfloat16) oneDNN's matmuls and convolutions
// ask for scratchpads that depend on the CPU's instructions (on AMX, 22 KB
// for a 64 x 64 weight gradient, 3.1 MB for resnet-tiny's stem:
// docs/mixed-precision-and-checkpointing.md; up to 87 KiB above llama-odd's
// predicted peak) and that the tables do not predict: there
// `scratch_unpredicted` checks the peak from below only (measured at least
// 100 - peak_percent % of predicted).
#pragma once

#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "profiler/report/rank_report.h"

namespace memprof {

// How far measured activations and peak may be from their predictions, in
// percent of the prediction.
struct Band {
  int64_t activations_percent = 3;
  int64_t peak_percent = 5;
};

inline void ExpectPredictionHolds(const RankReport& rank,
                                  const std::string& label,
                                  bool scratch_unpredicted = false,
                                  Band band = {}) {
  SCOPED_TRACE(label + ", rank " + std::to_string(rank.context.rank));
  for (Category exact :
       {Category::kWeights, Category::kGradients, Category::kOptimizerState,
        Category::kDdpBuckets, Category::kInputs, Category::kUnattributed}) {
    const CategoryFigures& f = rank.Of(exact);
    EXPECT_EQ(f.peak_bytes, f.predicted_bytes) << CategoryName(exact);
    EXPECT_EQ(f.measured_bytes, f.peak_bytes)
        << CategoryName(exact) << " is constant through the steady state";
  }
  const CategoryFigures& casts = rank.Of(Category::kWeightCasts);
  EXPECT_EQ(casts.peak_bytes, casts.predicted_bytes) << "weight_casts";
  EXPECT_EQ(rank.parameters, rank.predicted_parameters);
  const int64_t activations = rank.Of(Category::kActivations).peak_bytes;
  const int64_t predicted = rank.Of(Category::kActivations).predicted_bytes;
  EXPECT_GT(predicted, 0);
  EXPECT_LE(std::llabs(activations - predicted),
            predicted * band.activations_percent / 100)
      << "activations: measured " << activations << ", predicted " << predicted;
  const int64_t peak = rank.peak.total_bytes;
  const int64_t peak_predicted = rank.predicted_peak.total_bytes;
  // In float32 the peak is never more than 0.01% over its prediction: a
  // prediction under the run makes fit say "fits" where the run runs out
  // (gpt-tiny at micro-batch 1 was 2.05% under before the moments of
  // Note [Head backward]). Except ResNet's: oneDNN's convolutions take
  // per-thread scratchpads the table does not predict (docs/prediction.md;
  // resnet-tiny, micro-batch 1, checkpointed: 2.94% over).
  if (rank.context.config.train.dtype == "float32" &&
      rank.context.config.model != "resnet") {
    EXPECT_LE(peak, peak_predicted + peak_predicted / 10000)
        << "peak: measured " << peak << " in " << PhaseName(rank.peak.phase)
        << ", over the prediction " << peak_predicted << " ("
        << rank.predicted_peak.what << ")";
  }
  if (scratch_unpredicted) {
    EXPECT_GE(peak, peak_predicted - peak_predicted * band.peak_percent / 100)
        << "peak: measured " << peak << " in " << PhaseName(rank.peak.phase)
        << ", predicted " << peak_predicted;
    return;
  }
  EXPECT_LE(std::llabs(peak - peak_predicted),
            peak_predicted * band.peak_percent / 100)
      << "peak: measured " << peak << " in " << PhaseName(rank.peak.phase)
      << ", predicted " << peak_predicted;
}

}  // namespace memprof
