// What must hold of a run with LoRA adapters, rank 4 on two targets: the
// prediction as for any run (prediction_checks.h) with activations within
// 1%, and gradients, optimizer state and DDP buckets of the adapters
// alone, 4, 8 and 4 bytes each (float32 adapters, Adam).
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/predict/prediction_checks.h"

namespace memprof {

struct LoraRunCase {
  std::string preset;
  std::string targets;
  std::string dtype;   // train.dtype
  int64_t adapters;    // r (in + out) per target
  double dropout = 0;  // lora.dropout
};

inline void PrintTo(const LoraRunCase& c, std::ostream* os) {
  *os << c.preset << " --lora-targets " << c.targets << " " << c.dtype;
  if (c.dropout > 0) *os << " dropout " << c.dropout;
}

inline std::string LoraFlags(const LoraRunCase& c) {
  return " --lora-rank 4 --lora-targets " + c.targets + " --train.dtype " +
         c.dtype +
         (c.dropout > 0 ? " --lora-dropout " + std::to_string(c.dropout) : "");
}

// Rank 4 on two targets of each CI-sized model: float32, and the recipe
// (bf16-autocast: base weights in bfloat16, adapters in float32).
inline std::vector<LoraRunCase> TwoTargets() {
  // llama-tiny: two layers of q_proj (64 -> 64) and v_proj (64 -> 32);
  // gpt-tiny: two blocks of c_attn (64 -> 192) and attn.c_proj (64 -> 64).
  const int64_t llama = 2 * (4 * (64 + 64) + 4 * (64 + 32));
  const int64_t gpt = 2 * (4 * (64 + 192) + 4 * (64 + 64));
  return {
      {"llama-tiny", "q_proj,v_proj", "float32", llama},
      {"gpt-tiny", "c_attn,attn.c_proj", "float32", gpt},
      {"llama-tiny", "q_proj,v_proj", "bf16-autocast", llama},
      {"gpt-tiny", "c_attn,attn.c_proj", "bf16-autocast", gpt},
  };
}

// With lora.dropout (float32 only): what each adapter keeps changes (Note
// [LoRA dropout]).
inline std::vector<LoraRunCase> TwoTargetsWithDropout() {
  std::vector<LoraRunCase> cases = TwoTargets();
  cases.erase(cases.begin() + 2, cases.end());
  for (LoraRunCase& c : cases) c.dropout = 0.1;
  return cases;
}

inline void ExpectLoraRunHolds(const RankReport& rank, const LoraRunCase& c) {
  const std::string label = c.preset + LoraFlags(c);
  ExpectPredictionHolds(rank, label,
                        /*scratch_unpredicted=*/c.dtype != "float32",
                        Band{1, c.preset == "llama-tiny" ? 3 : 5});
  SCOPED_TRACE(label + ", rank " + std::to_string(rank.context.rank));
  EXPECT_EQ(rank.trained_parameters, c.adapters);
  EXPECT_EQ(rank.predicted_trained_parameters, c.adapters);
  EXPECT_EQ(rank.Of(Category::kGradients).peak_bytes, 4 * c.adapters);
  EXPECT_EQ(rank.Of(Category::kOptimizerState).peak_bytes, 8 * c.adapters);
  EXPECT_EQ(rank.Of(Category::kDdpBuckets).peak_bytes, 4 * c.adapters);
}

}  // namespace memprof
