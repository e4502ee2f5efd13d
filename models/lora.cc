#include "models/lora.h"

#include <algorithm>

#include "models/lora_rows.h"

namespace memprof {

void AttachAdapters(torch::nn::Module& root, const RunConfig& config,
                    torch::Dtype dtype) {
  const std::vector<std::string> adapted = AdaptedModules(config);
  const int64_t rank = config.lora.rank;
  for (const auto& item : root.named_modules()) {
    if (std::find(adapted.begin(), adapted.end(), item.key()) == adapted.end())
      continue;
    auto* linear = item.value()->as<torch::nn::Linear>();
    TORCH_INTERNAL_ASSERT(linear != nullptr, item.key(), " is not a Linear");
    const int64_t in = linear->options.in_features(),
                  out = linear->options.out_features();
    // A Linear's own initialisation is PEFT's for A.
    torch::nn::Linear a(torch::nn::LinearOptions(in, rank).bias(false));
    torch::nn::Linear b(torch::nn::LinearOptions(rank, out).bias(false));
    {
      torch::NoGradGuard no_grad;
      b->weight.zero_();
    }
    a->to(dtype);
    b->to(dtype);
    linear->register_module("lora_A", a);
    linear->register_module("lora_B", b);
  }
  for (auto& item : root.named_parameters()) {
    const std::string& name = item.key();
    const bool adapter = name.find(".lora_A.") != std::string::npos ||
                         name.find(".lora_B.") != std::string::npos;
    if (!adapter) item.value().set_requires_grad(false);
  }
}

torch::Tensor WithAdapter(const torch::nn::LinearImpl& linear,
                          const torch::Tensor& x, const torch::Tensor& base,
                          const LoraConfig& lora, bool training) {
  const auto children = linear.named_children();
  const auto* a = children.find("lora_A");
  if (a == nullptr) return base;
  const auto& b = *children.find("lora_B");
  torch::Tensor in = x;
  if (lora.dropout > 0) {
    in = torch::nn::functional::dropout(
        x, torch::nn::functional::DropoutFuncOptions()
               .p(lora.dropout)
               .training(training));
  }
  const torch::Tensor& a_weight = (*a)->as<torch::nn::Linear>()->weight;
  const torch::Tensor& b_weight = b->as<torch::nn::Linear>()->weight;
  const double scale = lora.alpha / static_cast<double>(lora.rank);
  return base + torch::linear(torch::linear(in, a_weight), b_weight) * scale;
}

}  // namespace memprof
