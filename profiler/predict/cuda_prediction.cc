#include "profiler/predict/cuda_prediction.h"

#include <algorithm>
#include <string>
#include <vector>

#include "profiler/base/human_bytes.h"

namespace memprof {
namespace {

class Sequence {
 public:
  // `trained_only`: of kParameter rows, the trained ones (a gradient
  // each; Note [Frozen parameters]).
  std::vector<uint64_t> AllocRows(const SizeTable& table, RowKind kind,
                                  bool trained_only = false) {
    std::vector<uint64_t> blocks;
    for (const SizeRow& row : table.rows) {
      if (row.kind != kind || row.Bytes() == 0) continue;
      if (trained_only && row.frozen) continue;
      blocks.push_back(Alloc(row.Bytes()));
    }
    return blocks;
  }
  // The rows of `kind` that satisfy `in`.
  template <typename In>
  std::vector<uint64_t> AllocRowsOf(const SizeTable& table, RowKind kind,
                                    const In& in) {
    std::vector<uint64_t> blocks;
    for (const SizeRow& row : table.rows) {
      if (row.kind != kind || row.Bytes() == 0 || !in(row)) continue;
      blocks.push_back(Alloc(row.Bytes()));
    }
    return blocks;
  }
  uint64_t Alloc(int64_t bytes) { return model_.Malloc(bytes); }
  void Free(const std::vector<uint64_t>& blocks) {
    for (uint64_t block : blocks) model_.Free(block);
  }
  const CudaAllocatorModel& model() const { return model_; }

 private:
  CudaAllocatorModel model_;
};

}  // namespace

CudaPrediction PredictOnCuda(const Prediction& p, const RunConfig& config) {
  const SizeTable& table = p.table;
  const bool adam = KeepsMoments(config.train);
  // With gradient_as_bucket_view the gradients are views of the buckets.
  const bool own_gradients = !config.ddp.gradient_as_bucket_view;
  // The trained parameter rows (Note [Frozen parameters]): step 1's one
  // bucket, and those whose optimizer state this rank holds: all, or its
  // ZeRO-1 partition (p.owners, by trained parameter row).
  int64_t param_bytes = 0;
  std::vector<int64_t> owned;
  int64_t largest = 0;
  for (const SizeRow& row : table.rows) {
    if (row.kind != RowKind::kParameter || row.frozen) continue;
    param_bytes += row.Bytes();
    const size_t i = owned.size();
    owned.push_back(p.owners.empty() || p.owners[i] == p.rank ? row.Bytes()
                                                              : 0);
    largest = std::max(largest, owned.back());
  }
  Sequence s;
  s.AllocRows(table, RowKind::kParameter);
  s.AllocRows(table, RowKind::kBuffer);
  std::vector<uint64_t> bucket{s.Alloc(param_bytes)};
  std::vector<uint64_t> gradients, state;
  CudaAllocatorFigures early_backward, head_backward, block_backward,
      late_backward, optimizer_step;
  const int32_t busiest = p.busiest_block, stage = p.busiest_stage;
  const auto is = [](int32_t block) {
    return [block](const SizeRow& row) { return row.block == block; };
  };
  // The busiest block's rows freed before its busiest stage (Note [Block
  // stages]).
  const auto freed_before_stage = [busiest, stage](const SizeRow& row) {
    return row.block == busiest && row.freed_after < stage;
  };
  const auto in_blocks = [&](int32_t from, int32_t to) {
    return [from, to, freed_before_stage](const SizeRow& row) {
      return row.block >= from && row.block <= to && !freed_before_stage(row);
    };
  };
  for (int step = 1; step <= 2; ++step) {
    if (step == 2) {
      s.Free(bucket);
      bucket.clear();
      for (int64_t bytes : RebuiltBuckets(table, config)) {
        bucket.push_back(s.Alloc(bytes));
      }
    }
    const std::vector<uint64_t> inputs = s.AllocRows(table, RowKind::kInput);
    // Saved rows, and under bf16-autocast the weights' copies, held as
    // saved rows are: until the end of backward, until a block's backward
    // (up to and after the busiest block), freed before the blocks', or
    // before the output projection's gradients (Note [Head backward]).
    struct Held {
      std::vector<uint64_t> held, before_stage, below, above, head, loss;
    };
    const auto hold = [&](RowKind kind) {
      return Held{s.AllocRowsOf(table, kind, is(-1)),
                  s.AllocRowsOf(table, kind, freed_before_stage),
                  s.AllocRowsOf(table, kind, in_blocks(0, busiest)),
                  s.AllocRowsOf(table, kind,
                                in_blocks(busiest + 1, SizeRow::kHead - 1)),
                  s.AllocRowsOf(table, kind, is(SizeRow::kNoBlock)),
                  s.AllocRowsOf(table, kind, is(SizeRow::kHead))};
    };
    const Held saved = hold(RowKind::kSaved);
    const Held casts = hold(RowKind::kWeightCast);
    // The cache's own copies are freed when the forward's region ends.
    const std::vector<uint64_t> cached =
        s.AllocRowsOf(table, RowKind::kWeightCast, is(SizeRow::kForwardOnly));
    s.Free(cached);
    const std::vector<uint64_t> workspace =
        s.AllocRowsOf(table, RowKind::kWorkspace, is(SizeRow::kEveryBlock));
    if (step == 1 && own_gradients) {
      gradients =
          s.AllocRows(table, RowKind::kParameter, /*trained_only=*/true);
    }
    // Note [Accumulated bucket views]: fresh gradients beside the buckets
    // through the last micro-batch's backward.
    const std::vector<uint64_t> fresh =
        FreshGradientsBesideBuckets(config)
            ? s.AllocRows(table, RowKind::kParameter, /*trained_only=*/true)
            : std::vector<uint64_t>{};
    early_backward = s.model().now();
    s.Free(saved.loss);
    s.Free(casts.loss);
    s.Free(workspace);
    // The output projection's backward.
    const std::vector<uint64_t> projection =
        s.AllocRowsOf(table, RowKind::kWorkspace, is(SizeRow::kHead));
    head_backward = s.model().now();
    s.Free(projection);
    s.Free(saved.head);
    s.Free(casts.head);
    s.Free(saved.above);
    s.Free(casts.above);
    // The busiest block's backward (a checkpointed block's after its rerun).
    if (busiest >= 0) {
      const std::vector<uint64_t> rerun_early =
          s.AllocRowsOf(table, RowKind::kRecomputed, freed_before_stage);
      const std::vector<uint64_t> rerun = s.AllocRowsOf(
          table, RowKind::kRecomputed, in_blocks(busiest, busiest));
      const std::vector<uint64_t> rerun_casts_early =
          s.AllocRowsOf(table, RowKind::kRecomputedCast, freed_before_stage);
      const std::vector<uint64_t> rerun_casts = s.AllocRowsOf(
          table, RowKind::kRecomputedCast, in_blocks(busiest, busiest));
      // Its stages before the busiest freed what they held.
      s.Free(rerun_early);
      s.Free(rerun_casts_early);
      s.Free(saved.before_stage);
      s.Free(casts.before_stage);
      const std::vector<uint64_t> its = s.AllocRowsOf(
          table, RowKind::kWorkspace, [busiest, stage](const SizeRow& row) {
            return row.block == busiest && row.stage == stage;
          });
      block_backward = s.model().now();
      s.Free(its);
      s.Free(rerun_casts);
      s.Free(rerun);
    }
    s.Free(saved.below);
    s.Free(casts.below);
    // Late in backward.
    const std::vector<uint64_t> late =
        s.AllocRowsOf(table, RowKind::kWorkspace, is(SizeRow::kNoBlock));
    late_backward = s.model().now();
    s.Free(late);
    s.Free(fresh);
    s.Free(saved.held);
    s.Free(casts.held);
    // The loss, a scalar that outlives backward (the prediction's optimizer
    // moment counts it as the activations left).
    const std::vector<uint64_t> loss{s.Alloc(4)};
    // Adam's two moments, or SGD's momentum buffer.
    const int copies = adam ? 2 : config.train.momentum > 0 ? 1 : 0;
    if (step == 1) {
      for (int64_t bytes : owned) {
        for (int i = 0; i < copies && bytes > 0; ++i) {
          state.push_back(s.Alloc(bytes));
        }
      }
    }
    std::vector<uint64_t> update;
    if (adam && largest > 0) update = {s.Alloc(largest), s.Alloc(largest)};
    optimizer_step = s.model().now();
    s.Free(update);
    s.Free(loss);
    s.Free(inputs);
  }
  const PredictedMoment& peak = p.Peak();
  return {&peak == &p.optimizer_step   ? optimizer_step
          : &peak == &p.late_backward  ? late_backward
          : &peak == &p.block_backward ? block_backward
          : &peak == &p.head_backward  ? head_backward
                                       : early_backward,
          s.model().peak_reserved()};
}

}  // namespace memprof

namespace memprof {

int64_t MathPathAttentionBytes(const RunConfig& config, int64_t micro_batch) {
  const LlamaConfig& l = config.llama;
  const int64_t heads = l.num_attention_heads;
  const int64_t kv_heads =
      l.num_key_value_heads == 0 ? heads : l.num_key_value_heads;
  if (config.model != "llama" || config.train.device != "cuda" ||
      config.train.dtype != "float32" || kv_heads >= heads) {
    return 0;
  }
  // Checkpointed blocks keep one layer's at a time, in its recompute.
  const int64_t layers = config.train.activation_checkpointing == "blocks"
                             ? 1
                             : l.num_hidden_layers;
  const double bytes =
      4.0 * static_cast<double>(layers) * static_cast<double>(micro_batch) *
      static_cast<double>(heads) * static_cast<double>(l.seq_len) *
      static_cast<double>(l.seq_len);
  return bytes >= 9.0e18 ? int64_t{9'000'000'000'000'000'000}
                         : static_cast<int64_t>(bytes);
}

std::string MathPathAttentionNote(const RunConfig& config,
                                  int64_t micro_batch) {
  const int64_t bytes = MathPathAttentionBytes(config, micro_batch);
  if (bytes == 0) return "";
  return "not in these figures: on a GPU, float32 attention with grouped "
         "key/value heads (" +
         std::to_string(config.llama.num_key_value_heads) + " of " +
         std::to_string(config.llama.num_attention_heads) +
         ") has no fused kernel and takes PyTorch's math path, which keeps "
         "the [B, H, T, T] float32 attention probabilities of " +
         (config.train.activation_checkpointing == "blocks"
              ? std::string("the layer it recomputes")
              : std::string("every layer")) +
         " for backward: " + HumanBytes(bytes) + " more at micro-batch " +
         std::to_string(micro_batch) +
         ", and k and v repeated per query head (unmeasured: memprof has not "
         "run it on a GPU); bf16-autocast and bfloat16 take the fused "
         "kernel, as predicted\n";
}

}  // namespace memprof
