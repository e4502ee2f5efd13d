#include "profiler/run_config.h"

#include <nlohmann/json.hpp>

#include "profiler/errors.h"

namespace memprof {
namespace {

void RequirePositive(const std::string& key, double value) {
  if (!(value > 0)) {
    throw ConfigError(
        key, key + " must be positive, got " + nlohmann::json(value).dump());
  }
}

}  // namespace

void ValidateRunConfig(const RunConfig& c) {
  if (c.model != "mlp") {
    throw ConfigError("model",
                      "unknown model '" + c.model + "'; known models: mlp");
  }
  RequirePositive("mlp.input", c.mlp.input);
  RequirePositive("mlp.hidden", c.mlp.hidden);
  RequirePositive("mlp.depth", c.mlp.depth);
  RequirePositive("mlp.output", c.mlp.output);
  RequirePositive("train.micro_batch", c.train.micro_batch);
  RequirePositive("train.steps", c.train.steps);
  RequirePositive("train.lr", c.train.lr);
  RequirePositive("ddp.world_size", c.ddp.world_size);
  RequirePositive("ddp.bucket_cap_mb", c.ddp.bucket_cap_mb);
  RequirePositive("ddp.timeout_s", static_cast<double>(c.ddp.timeout_s));
  if (c.train.global_batch < 0) {
    throw ConfigError("train.global_batch",
                      "train.global_batch must be positive (or 0 for unset), "
                      "got " +
                          std::to_string(c.train.global_batch));
  }
  if (c.train.global_batch > 0 &&
      c.train.global_batch % c.ddp.world_size != 0) {
    throw ConfigError("train.global_batch",
                      "train.global_batch " +
                          std::to_string(c.train.global_batch) +
                          " does not divide over ddp.world_size " +
                          std::to_string(c.ddp.world_size) +
                          "; choose a multiple of the world size");
  }
  if (c.train.optimizer != "adam" && c.train.optimizer != "adamw" &&
      c.train.optimizer != "sgd") {
    throw ConfigError("train.optimizer", "unknown optimizer '" +
                                             c.train.optimizer +
                                             "'; known: adam, adamw, sgd");
  }
  if (c.train.dtype != "float32") {
    throw ConfigError("train.dtype", "unsupported dtype '" + c.train.dtype +
                                         "'; supported: float32");
  }
}

int64_t MicroBatch(const RunConfig& c) {
  return c.train.global_batch > 0 ? c.train.global_batch / c.ddp.world_size
                                  : c.train.micro_batch;
}

nlohmann::json ToJson(const RunConfig& c) {
  return {
      {"source", c.source},
      {"model", c.model},
      {"mlp",
       {{"input", c.mlp.input},
        {"hidden", c.mlp.hidden},
        {"depth", c.mlp.depth},
        {"output", c.mlp.output}}},
      {"train",
       {{"micro_batch", c.train.micro_batch},
        {"global_batch", c.train.global_batch},
        {"steps", c.train.steps},
        {"optimizer", c.train.optimizer},
        {"lr", c.train.lr},
        {"dtype", c.train.dtype},
        {"zero_grad_set_to_none", c.train.zero_grad_set_to_none},
        {"seed", c.train.seed}}},
      {"ddp",
       {{"world_size", c.ddp.world_size},
        {"bucket_cap_mb", c.ddp.bucket_cap_mb},
        {"gradient_as_bucket_view", c.ddp.gradient_as_bucket_view},
        {"timeout_s", c.ddp.timeout_s}}},
  };
}

}  // namespace memprof
