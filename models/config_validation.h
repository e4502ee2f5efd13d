// Whether a RunConfig describes a run the models can build: positive sizes,
// shapes each model accepts (gpt.heads divides gpt.d_model, a ResNet depth
// with a stage table), known optimizer and dtype, batch arithmetic that
// divides over the ranks.
#pragma once

#include "profiler/base/run_config.h"

namespace memprof {

// Throws ConfigError naming the offending key.
void ValidateRunConfig(const RunConfig& config);

// Note [Totals across ranks]
// predict and fit add figures up over the ranks (the model state the group
// holds, what plain replication duplicates). Each rank's model state is at
// most 16 times the parameters' bytes (fp32 weights, gradients, Adam's two
// moments and the DDP buckets are 5 times), so a world of at most
// INT64_MAX / (16 x parameter bytes) ranks keeps every total countable in
// int64 bytes; a larger ddp.world_size is refused up front, and fit
// searches world sizes only up to it. Below 2^24 ranks (kMaxDdpWorldSize)
// it bites only beyond 8.59 billion fp32 parameters.
inline constexpr int64_t kModelStatePerParameterByte = 16;
inline constexpr int64_t kMaxDdpWorldSize = int64_t{1} << 24;
// The most ranks of this config's model whose totals are countable, at
// most kMaxDdpWorldSize. Expects a config whose model keys are valid.
int64_t LargestCountableWorld(const RunConfig& config);

}  // namespace memprof
