// LoRA adapters on a built model's Linear modules (Note [LoRA adapters] in
// models/lora_rows.h).
#pragma once

#include <torch/torch.h>

#include "profiler/base/run_config.h"

namespace memprof {

// Gives each Linear module of `root` that AdaptedModules(config) names its
// adapters, as children lora_A (rank x in, Kaiming-uniform a = sqrt(5))
// and lora_B (out x rank, zeros), in `dtype`; then freezes every other
// parameter of `root`. Draws from the default generator.
void AttachAdapters(torch::nn::Module& root, const RunConfig& config,
                    torch::Dtype dtype);

// `base`, the Linear's output for x, plus (alpha / rank) *
// lora_B(lora_A(dropout(x))) when the Linear has adapters; `base` alone
// otherwise.
torch::Tensor WithAdapter(const torch::nn::LinearImpl& linear,
                          const torch::Tensor& x, const torch::Tensor& base,
                          const LoraConfig& lora, bool training);

}  // namespace memprof
