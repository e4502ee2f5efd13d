#include "models/mlp.h"

namespace memprof {

MlpImpl::MlpImpl(const MlpConfig& config) {
  int64_t width = config.input;
  for (int64_t i = 0; i < config.depth; ++i) {
    layers_->push_back(torch::nn::Linear(width, config.hidden));
    layers_->push_back(torch::nn::ReLU());
    width = config.hidden;
  }
  layers_->push_back(torch::nn::Linear(width, config.output));
  register_module("layers", layers_);
}

torch::Tensor MlpImpl::forward(torch::Tensor x) { return layers_->forward(x); }

MlpModel::MlpModel(const MlpConfig& config) : config_(config), mlp_(config) {}

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
