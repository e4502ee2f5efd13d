#include "models/mlp.h"

#include <string>

#include "models/lora.h"
#include "models/scope_observer.h"

namespace memprof {

MlpImpl::MlpImpl(const MlpConfig& config, const LoraConfig& lora)
    : lora_(lora) {
  int64_t width = config.input;
  for (int64_t i = 0; i < config.depth; ++i) {
    layers_->push_back(torch::nn::Linear(width, config.hidden));
    layers_->push_back(torch::nn::ReLU());
    width = config.hidden;
  }
  layers_->push_back(torch::nn::Linear(width, config.output));
  register_module("layers", layers_);
}

// Hidden layer i, layers.2i (Linear) and its ReLU, runs in the scope named
// as its Linear's parameters are; the output Linear in none.
torch::Tensor MlpImpl::forward(torch::Tensor x) {
  const size_t last = layers_->size() - 1;
  for (size_t i = 0; i < last; i += 2) {
    const ModelScope named("layers." + std::to_string(i));
    x = Layer(i, x);
    x = layers_[i + 1]->as<torch::nn::ReLU>()->forward(x);
  }
  return Layer(last, x);
}

torch::Tensor MlpImpl::Layer(size_t i, const torch::Tensor& x) {
  torch::nn::LinearImpl& linear = *layers_[i]->as<torch::nn::Linear>();
  return WithAdapter(linear, x, linear.forward(x), lora_, is_training());
}

MlpModel::MlpModel(const MlpConfig& config, const LoraConfig& lora)
    : config_(config), mlp_(config, lora) {}

Batch MlpModel::MakeBatch(int64_t micro_batch) {
  return Batch{
      torch::randn({micro_batch, config_.input}, torch::dtype(float_dtype())),
      torch::randint(config_.output, {micro_batch}, torch::kLong)};
}

torch::Tensor MlpModel::Loss(const Batch& batch) {
  return torch::nn::functional::cross_entropy(mlp_->forward(batch.input),
                                              batch.target);
}

}  // namespace memprof
