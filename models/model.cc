#include "models/model.h"

#include "models/gpt.h"
#include "models/llama.h"
#include "models/lora.h"
#include "models/mlp.h"
#include "models/resnet.h"
#include "profiler/base/errors.h"
#include "profiler/base/frozen_parameters.h"

namespace memprof {

Batch TokenBatch(int64_t micro_batch, int64_t seq_len, int64_t vocab) {
  const std::vector<int64_t> shape = {micro_batch, seq_len};
  return Batch{torch::randint(vocab, shape, torch::kLong),
               torch::randint(vocab, shape, torch::kLong)};
}

namespace {

std::unique_ptr<TrainableModel> Build(const RunConfig& config) {
  if (config.model == "mlp") {
    return std::make_unique<MlpModel>(config.mlp, config.lora);
  }
  const bool checkpoint_blocks =
      config.train.activation_checkpointing == "blocks";
  if (config.model == "gpt") {
    return std::make_unique<GptModel>(config.gpt, checkpoint_blocks,
                                      config.lora);
  }
  if (config.model == "llama") {
    return std::make_unique<LlamaModel>(config.llama, checkpoint_blocks,
                                        config.lora);
  }
  if (config.model == "resnet") {
    return std::make_unique<ResnetModel>(config.resnet, checkpoint_blocks);
  }
  throw ConfigError("model", "unknown model '" + config.model +
                                 "'; known models: " + kKnownModels);
}

}  // namespace

void TrainableModel::ConvertTo(torch::Dtype dtype) {
  torch::NoGradGuard no_grad;
  for (torch::Tensor t : module().parameters()) t.set_data(t.to(dtype));
  for (torch::Tensor t : module().buffers()) {
    if (t.is_floating_point()) t.set_data(t.to(dtype));
  }
  float_dtype_ = dtype;
}

std::unique_ptr<TrainableModel> BuildModel(const RunConfig& config) {
  std::unique_ptr<TrainableModel> model = Build(config);
  // Under bf16-autocast with adapters, the frozen base is stored in
  // bfloat16 and the adapters in float32 (Note [LoRA under autocast]).
  const bool lora = config.lora.rank > 0;
  if (config.train.dtype == "bfloat16" ||
      (lora && config.train.dtype == "bf16-autocast")) {
    model->ConvertTo(torch::kBFloat16);
  }
  if (lora) {
    AttachAdapters(
        model->module(), config,
        config.train.dtype == "bfloat16" ? torch::kBFloat16 : torch::kFloat32);
  }
  // Note [Frozen parameters]
  const std::vector<std::string> frozen = FreezePrefixes(config.train.freeze);
  for (auto& item : model->module().named_parameters()) {
    if (IsFrozen(frozen, item.key())) item.value().set_requires_grad(false);
  }
  return model;
}

}  // namespace memprof
