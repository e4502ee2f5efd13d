// Does a run fit a per-rank memory budget, and if not, will more
// data-parallel ranks help? From the prediction alone (torch-free): the
// answer `memprof fit` prints, and the verdict of an out-of-memory report.
//
// Note [Fit verdicts]
// - fits: the requested micro-batch's predicted peak is within the budget;
//   also the largest micro-batch per rank that is.
// - activation-overflow: micro-batch 1 fits but the requested one does not.
//   The model state fits; what grows with the micro-batch does not, so data
//   parallelism at a smaller per-rank micro-batch (same global batch on
//   more ranks) is a legitimate lever.
// - model-state-overflow: even micro-batch 1 does not fit: weights,
//   gradients, optimizer state and DDP buckets (with the optimizer's update
//   workspace) take the budget. Every data-parallel replica holds all of
//   them, so no number of ranks helps; ZeRO, which shards them, might: the
//   answer names the smallest stage that fits at N ranks, or the ranks
//   ZeRO-3 would need.
// ZeRO figures are the model state of ZeroPricing (no full-size DDP
// buckets) plus what micro-batch 1 adds on top of the model state at its
// predicted peak (activations, inputs, workspace).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/base/run_config.h"
#include "profiler/predict/prediction.h"

namespace memprof {

enum class FitVerdict { kFits, kActivationOverflow, kModelStateOverflow };

// Note [Fit levers]
// When the requested run does not fit, what would, each change alone from
// the requested config, in this order: a smaller micro-batch per rank (and
// the ranks that keep the global batch), activation checkpointing (gpt,
// resnet), the longest sequence (gpt) or the largest resolution (resnet)
// that fits at the requested micro-batch, bf16 autocast (from float32:
// mostly bfloat16 activations, at the price of the weights' bfloat16
// copies; model state unchanged), and sharding the model state
// (ZeRO, stages 1-3 at the run's ranks, each at the requested
// micro-batch). Only the levers that fit are listed. When the model state
// alone is over the budget no data-parallel or activation lever can help;
// only sharding is tried then.
struct FitLever {
  std::string what;        // "activation checkpointing"
  std::string flags;       // "--train.activation_checkpointing blocks"
  int64_t peak_bytes = 0;  // predicted per rank
  // It changes one rank's run itself (not the micro-batch or the ranks):
  // fit --measure can confirm it with one rank.
  bool one_rank = false;
};
const char* FitVerdictName(FitVerdict verdict);  // "activation-overflow"

struct FitAnswer {
  FitVerdict verdict = FitVerdict::kFits;
  int64_t budget_bytes = 0;
  int64_t world_size = 1;
  int64_t micro_batch = 0;          // requested, per rank
  int64_t peak_bytes = 0;           // predicted, at the requested micro-batch
  int64_t model_state_bytes = 0;    // weights + gradients + optimizer + buckets
  int64_t peak1_bytes = 0;          // predicted, at micro-batch 1
  int64_t largest_micro_batch = 0;  // 0: not even 1 fits
  int64_t largest_peak_bytes = 0;
  ZeroPricing zero;                 // at world_size
  int64_t zero_peak_bytes[4] = {};  // [1..3]: stage k at micro-batch 1
  int zero_stage = 0;               // smallest stage that fits; 0: none
  int64_t zero3_ranks = 0;  // fewest ranks at which ZeRO-3 fits; 0: none
  // Note [Fit levers]: empty when the requested run fits.
  std::vector<FitLever> levers;
  bool model_state_alone_overflows = false;
};

// The prediction's peak for one rank of `config` at `micro_batch` per rank.
int64_t PredictedPeakAt(const RunConfig& config, int64_t micro_batch);

// `config` validated; its micro-batch per rank is MicroBatch(config).
FitAnswer Fit(const RunConfig& config, int64_t budget_bytes);

// The verdict with its deciding figures, one sentence ("activation-overflow:
// the model state, 216 KiB per rank, fits the 250 KiB budget; ...").
std::string FitVerdictSentence(const FitAnswer& answer);

// Every figure, a line each, for `memprof fit`.
std::string FormatFit(const FitAnswer& answer, const RunConfig& config);

}  // namespace memprof
