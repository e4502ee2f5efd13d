#include "models/model.h"

#include "models/mlp.h"
#include "profiler/errors.h"

namespace memprof {

std::unique_ptr<TrainableModel> BuildModel(const RunConfig& config) {
  if (config.model == "mlp") return std::make_unique<MlpModel>(config.mlp);
  throw ConfigError("model",
                    "unknown model '" + config.model + "'; known models: mlp");
}

}  // namespace memprof
