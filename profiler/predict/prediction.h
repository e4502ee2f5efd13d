// The analytic prediction of one rank's memory: a sum over the model's size
// table (models/size_table.h) times the training multipliers. No tensor is
// built. See docs/prediction.md.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "models/size_table.h"
#include "profiler/base/category.h"
#include "profiler/base/run_config.h"

namespace memprof {

// One candidate moment for the steady-state peak, with what is live then.
struct PredictedMoment {
  Phase phase = Phase::kIdle;
  std::string what;  // "backward, first node: ..."
  Breakdown bytes{};
  int64_t Total() const { return Sum(bytes); }
};

// Per-rank model state (weights + gradients + optimizer state, without
// communication buckets) at the run's world size N, under plain data
// parallelism and ZeRO stages 1-3 (Rajbhandari et al. 2019): stage 1
// partitions the optimizer state, stage 2 also the gradients, stage 3 also
// the weights, each into N shards (rounded up).
struct ZeroPricing {
  int64_t plain_bytes = 0;
  int64_t stage1_bytes = 0;
  int64_t stage2_bytes = 0;
  int64_t stage3_bytes = 0;
  // What the group holds in duplicate under plain data parallelism:
  // (N - 1) copies of the model state.
  int64_t duplicated_bytes = 0;
};

struct Prediction {
  int64_t parameters = 0;  // P, parameter elements
  // Those not frozen (Note [Frozen parameters]): the ones with gradients,
  // optimizer state and bucket space.
  int64_t trained_parameters = 0;
  int64_t buffer_bytes = 0;  // module buffers, a sub-figure of weights
  int64_t micro_batch = 0;
  int64_t world_size = 1;
  // Per category, the figure ComparedFigure() names: its own largest live
  // bytes over a steady-state step (peak_bytes), except temporaries: the
  // workspace live at the predicted peak (measured_bytes, at the peak).
  Breakdown bytes{};
  // Model state (weights, gradients, optimizer state, DDP buckets) per
  // parameter, in bytes.
  double model_state_bytes_per_parameter = 0;
  // The steady-state peak: the largest of the moments.
  PredictedMoment early_backward;  // every saved tensor, the workspace rows
  // The output projection's backward, for tables with rows for it (GPT's
  // and Llama's, Note [Head backward] in models/head_backward.h); all zero
  // otherwise.
  PredictedMoment head_backward;
  PredictedMoment optimizer_step;  // the optimizer's workspace
  // The busiest block's backward, for tables with blocks (SizeTable::blocks:
  // checkpointed blocks just after their rerun, Note [Checkpointed
  // activations]; the MLP's hidden layers); all zero without.
  PredictedMoment block_backward;
  int32_t busiest_block = -1;  // block_backward's block; -1: none
  int32_t busiest_stage = 0;   // its stage (Note [Block stages])
  // Late in backward, after every block's, when the table has workspace
  // rows for it (GPT's embeddings); all zero otherwise.
  PredictedMoment late_backward;
  // Every candidate moment, early backward first (a moment a table has no
  // rows for is all zero, its phase kIdle).
  std::array<const PredictedMoment*, 5> Moments() const {
    return {&early_backward, &head_backward, &optimizer_step, &block_backward,
            &late_backward};
  }
  std::array<PredictedMoment*, 5> Moments() {
    return {&early_backward, &head_backward, &optimizer_step, &block_backward,
            &late_backward};
  }
  // The largest moment; on a tie, the first.
  const PredictedMoment& Peak() const {
    const PredictedMoment* peak = &early_backward;
    for (const PredictedMoment* m : Moments()) {
      if (m->Total() > peak->Total()) peak = m;
    }
    return *peak;
  }
  ZeroPricing zero;
  // ddp.zero_stage 1: the partition (Note [ZeRO-1 partition]): each
  // parameter row's owner, and the parameter elements each rank owns.
  // Empty at stage 0.
  std::vector<int> owners;
  std::vector<int64_t> owned_parameters;
  int rank = 0;  // the rank predicted (it matters at stage 1 only)
  SizeTable table;
};

// Whether backward holds each trained gradient twice, fresh and in its
// DDP bucket (Note [Accumulated bucket views] in prediction.cc).
bool FreshGradientsBesideBuckets(const RunConfig& config);

// The prediction for rank `rank` of `config` (micro-batch from
// MicroBatch()). Ranks differ only under ddp.zero_stage 1, in optimizer
// state and the optimizer's workspace. Expects a validated config.
// `cpu_threads`: a CPU rank's threads where known (ReportContext::
// cpu_threads); 0: as the launcher would give them (CpuThreadsPerRank).
Prediction Predict(const RunConfig& config, int rank = 0, int cpu_threads = 0);

// The same from a given table at `micro_batch`: a program's own model
// (the session builds its parameter and buffer rows from the tracked
// modules; config.model is "program").
Prediction PredictFromTable(const RunConfig& config, SizeTable table,
                            int64_t micro_batch, int rank = 0);

// Under ZeRO-1 (p.owners not empty), the byte sizes of the trained rows
// each rank owns, ascending, for the ranks that own any.
std::map<int, std::vector<int64_t>> OwnedRowBytes(const Prediction& p);

// Under ZeRO-1, the ranks that stand for all: the lowest rank of each
// distinct partition share (the sizes of the rows it owns) in `p`'s
// partition, ascending; {p.rank} at stage 0.
std::vector<int> DistinctRanks(const Prediction& p);

// The rank with the highest predicted peak: rank 0 at stage 0 (every rank
// the same), under ZeRO-1 the one whose partition costs most (ties: the
// lowest rank).
Prediction PredictBusiestRank(const RunConfig& config);

// The DDP buckets' bytes after the Reducer's rebuild (step 2 on): the
// trained parameters in reverse order, a bucket closing once it holds at least
// its cap (1 MiB for the first, bucket_cap_mb after).
std::vector<int64_t> RebuiltBuckets(const SizeTable& table,
                                    const RunConfig& config);

// Model state's bytes per parameter as train.dtype and the optimizer make
// them: weights and gradients one element each (4 bytes, 2 in bfloat16),
// the optimizer's buffers, the DDP buckets (the gradients' dtype; 0 with
// gradient_as_bucket_view); under bf16-autocast up to 2 more, outside
// model state, for the weights' bfloat16 copies (weight_casts: only the
// weights that matmuls and convolutions use).
struct BytesPerParameter {
  int64_t weights = 0;
  int64_t gradients = 0;
  int64_t optimizer = 0;
  int64_t buckets = 0;
  int64_t casts = 0;  // at most
  int64_t State() const { return weights + gradients + optimizer + buckets; }
};
BytesPerParameter BytesPerParameterOf(const RunConfig& config);

// The statement every output makes of it: "fp32 + Adam: 4 each for weights
// and gradients, 8 for the moments, 4 for DDP buckets unless
// gradient_as_bucket_view", with the weight copies' 2 under autocast.
std::string BytesPerParameterNote(const RunConfig& config);

// With frozen parameters (trained < parameters), the split every output
// states: "11,082 parameters: 4,810 trained (20 bytes each: weights 4 +
// gradients 4 + optimizer 8 + DDP buckets 4), 6,272 frozen (4 bytes each:
// the weight alone)"; with [lora] "base 108,864 parameters frozen (4
// bytes each: the weight alone); adapters 2,048 parameters trained (20
// bytes each: ...)"; "" when every parameter is trained. `buckets`: the
// run has DDP buckets (a program without a tracked Reducer has none).
std::string TrainedFrozenSentence(int64_t parameters, int64_t trained,
                                  const RunConfig& config, bool buckets);

// The rank-report figure a category's prediction is compared with:
// "peak_bytes", or "measured_bytes" for temporaries (whose own maximum can
// fall anywhere in the step; what matters is what they add to the peak).
const char* ComparedFigure(Category category);

}  // namespace memprof
