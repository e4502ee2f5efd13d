#include "profiler/predict/prediction.h"

namespace memprof {
namespace {

// Adam and AdamW keep exp_avg and exp_avg_sq per parameter (x2); SGD
// without momentum keeps nothing.
int64_t OptimizerStateMultiplier(const TrainConfig& train) {
  return train.optimizer == "sgd" ? 0 : 2;
}

}  // namespace

Prediction Predict(const RunConfig& config) {
  Prediction p;
  p.micro_batch = MicroBatch(config);
  p.world_size = config.ddp.world_size;
  p.table = BuildSizeTable(config, p.micro_batch);
  const SizeTable& t = p.table;
  p.parameters = t.Elements(RowKind::kParameter);
  p.buffer_bytes = t.Bytes(RowKind::kBuffer);
  const int64_t param_bytes = t.Bytes(RowKind::kParameter);

  Breakdown state{};  // live through the whole step
  state[Index(Category::kWeights)] = param_bytes + p.buffer_bytes;
  state[Index(Category::kGradients)] = param_bytes;
  state[Index(Category::kOptimizerState)] =
      OptimizerStateMultiplier(config.train) * param_bytes;
  // With gradient_as_bucket_view the gradients are the buckets.
  state[Index(Category::kDdpBuckets)] =
      config.ddp.gradient_as_bucket_view ? 0 : param_bytes;
  state[Index(Category::kInputs)] = t.Bytes(RowKind::kInput);
  p.model_state_bytes_per_parameter =
      p.parameters > 0
          ? static_cast<double>(ModelStateBytes(state)) / p.parameters
          : 0;

  // Early in backward: every saved tensor and the model's workspace rows.
  p.early_backward.phase = Phase::kBackward;
  p.early_backward.what =
      "early in backward: every saved tensor and the workspace rows";
  p.early_backward.bytes = state;
  p.early_backward.bytes[Index(Category::kActivations)] =
      t.Bytes(RowKind::kSaved);
  p.early_backward.bytes[Index(Category::kTemporaries)] =
      t.Bytes(RowKind::kWorkspace);

  // Adam's step: denom = exp_avg_sq.sqrt() / sqrt(bias_correction2) makes
  // two temporaries the size of the parameter, live together; the largest
  // parameter decides. The loss (4 bytes) is still held by the loop.
  p.optimizer_step.phase = Phase::kOptimizer;
  p.optimizer_step.what =
      "optimizer step: two temporaries the size of the "
      "largest parameter";
  p.optimizer_step.bytes = state;
  p.optimizer_step.bytes[Index(Category::kActivations)] = 4;
  p.optimizer_step.bytes[Index(Category::kTemporaries)] =
      config.train.optimizer == "sgd" ? 0 : 2 * t.LargestParameterBytes();

  const int64_t n = config.ddp.world_size;
  auto shard = [n](int64_t bytes) { return (bytes + n - 1) / n; };
  const int64_t w = state[Index(Category::kWeights)];
  const int64_t g = state[Index(Category::kGradients)];
  const int64_t o = state[Index(Category::kOptimizerState)];
  p.zero.plain_bytes = w + g + o;
  p.zero.stage1_bytes = w + g + shard(o);
  p.zero.stage2_bytes = w + shard(g) + shard(o);
  p.zero.stage3_bytes = shard(w) + shard(g) + shard(o);
  p.zero.duplicated_bytes = (n - 1) * (w + g + o);

  p.bytes = state;
  p.bytes[Index(Category::kActivations)] = t.Bytes(RowKind::kSaved);
  p.bytes[Index(Category::kTemporaries)] =
      p.Peak().bytes[Index(Category::kTemporaries)];
  return p;
}

const char* ComparedFigure(Category category) {
  return category == Category::kTemporaries ? "measured_bytes" : "peak_bytes";
}

}  // namespace memprof
