// Whether a RunConfig describes a run the models can build: positive sizes,
// shapes each model accepts (gpt.heads divides gpt.d_model, a ResNet depth
// with a stage table), known optimizer and dtype, batch arithmetic that
// divides over the ranks.
#pragma once

#include "profiler/base/run_config.h"

namespace memprof {

// Throws ConfigError naming the offending key.
void ValidateRunConfig(const RunConfig& config);

}  // namespace memprof
