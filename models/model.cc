#include "models/model.h"

#include "models/gpt.h"
#include "models/mlp.h"
#include "models/resnet.h"
#include "profiler/base/errors.h"

namespace memprof {

std::unique_ptr<TrainableModel> BuildModel(const RunConfig& config) {
  if (config.model == "mlp") return std::make_unique<MlpModel>(config.mlp);
  const bool checkpoint_blocks =
      config.train.activation_checkpointing == "blocks";
  if (config.model == "gpt") {
    return std::make_unique<GptModel>(config.gpt, checkpoint_blocks);
  }
  if (config.model == "resnet") {
    return std::make_unique<ResnetModel>(config.resnet, checkpoint_blocks);
  }
  throw ConfigError("model", "unknown model '" + config.model +
                                 "'; known models: " + kKnownModels);
}

}  // namespace memprof
