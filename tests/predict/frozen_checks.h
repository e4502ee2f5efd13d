// What must hold of a run with everything but the last block frozen: the
// prediction as for any run (prediction_checks.h), and gradients, optimizer
// state and DDP buckets of the trained parameters alone, 4, 8 and 4 bytes
// each (float32, Adam).
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "tests/predict/prediction_checks.h"

namespace memprof {

struct FrozenRunCase {
  std::string preset;
  std::string freeze;
  int64_t trained;  // parameter elements left to train
};

inline void PrintTo(const FrozenRunCase& c, std::ostream* os) {
  *os << c.preset << " --freeze " << c.freeze;
}

// Each CI-sized model, everything frozen but its last block.
inline std::vector<FrozenRunCase> LastBlockTrained() {
  return {
      // layers.4 (64 x 64 + 64) and the output layer (64 x 10 + 10).
      {"mlp-tiny", "layers.0,layers.2", 4160 + 650},
      // h.1 (12 d^2 + 13 d) and ln_f (2 d), d = 64.
      {"gpt-tiny", "wte,wpe,h.0", 12 * 64 * 64 + 13 * 64 + 2 * 64},
      // model.layers.1 (q, o 64 x 64; k, v 32 x 64; gate, up, down
      // 176 x 64; two norms) and model.norm; the head is tied.
      {"llama-tiny", "model.embed_tokens,model.layers.0",
       2 * 4096 + 2 * 2048 + 3 * 11264 + 2 * 64 + 64},
  };
}

inline void ExpectFrozenRunHolds(const RankReport& rank,
                                 const FrozenRunCase& c) {
  const std::string label = c.preset + " --freeze " + c.freeze;
  ExpectPredictionHolds(rank, label, /*scratch_unpredicted=*/false,
                        c.preset == "llama-tiny" ? Band{1, 3} : Band{});
  SCOPED_TRACE(label + ", rank " + std::to_string(rank.context.rank));
  EXPECT_EQ(rank.trained_parameters, c.trained);
  EXPECT_EQ(rank.predicted_trained_parameters, c.trained);
  EXPECT_LT(rank.trained_parameters, rank.parameters);
  EXPECT_EQ(rank.Of(Category::kGradients).peak_bytes, 4 * c.trained);
  EXPECT_EQ(rank.Of(Category::kOptimizerState).peak_bytes, 8 * c.trained);
  EXPECT_EQ(rank.Of(Category::kDdpBuckets).peak_bytes, 4 * c.trained);
  EXPECT_EQ(rank.Of(Category::kWeights).peak_bytes,
            rank.Of(Category::kWeights).predicted_bytes);
}

}  // namespace memprof
