// Does a run fit a per-rank memory budget, and if not, will more
// data-parallel ranks help? From the prediction alone (torch-free): the
// answer `memprof fit` prints, and the verdict of an out-of-memory report.
//
// Note [Fit verdicts]
// Every figure compared with the budget is the run's figure (Note [Fit on a
// GPU]): the predicted peak's requested bytes, or on a GPU the predicted
// reserved bytes plus the memory outside the allocator.
// - fits: the requested micro-batch's figure is within the budget; also
//   the largest micro-batch per rank that is.
// - activation-overflow: the model state fits, and what grows with the
//   micro-batch does not: the requested micro-batch does not fit, and at
//   the peak it overflows at activations are live. When micro-batch 1 fits,
//   data parallelism at a smaller per-rank micro-batch (same global batch
//   on more ranks) is a legitimate lever; when not even micro-batch 1 fits
//   (largest_micro_batch 0), only the levers that shrink the activations,
//   or shard the model state to make room for them, can.
// - model-state-overflow: the model state alone (weights, gradients,
//   optimizer state and DDP buckets) is over the budget, or micro-batch 1
//   does not fit and its peak is the optimizer step (the model state with
//   the optimizer's update workspace, no activation live). Every
//   data-parallel replica holds all of it, so no number of ranks helps;
//   ZeRO, which shards it, might: the answer names the smallest stage that
//   fits at N ranks, or the ranks ZeRO-3 would need.
// ZeRO figures are the model state of ZeroPricing (no full-size DDP
// buckets) plus what micro-batch 1 adds on top of the model state at its
// predicted figure (activations, inputs, workspace; on a GPU also the
// allocator's rounding and cached segments and the memory outside it).
//
// Note [Fit on a GPU]
// With train.device cuda the budget is a GPU's memory, and what must fit in
// it is what the CUDA caching allocator reserves (PredictOnCuda's most
// reserved over the first two steps: requests rounded, segments kept
// cached) plus the device memory outside the allocator (the CUDA context,
// the libraries' handles and workspaces, NCCL's buffers: an allowance,
// kDefaultOutsideAllocatorBytes unless given). Every figure of the answer
// is then that sum, the verdict's, the largest micro-batch's, the levers'
// and ZeRO's alike. A CPU run is decided on its requested bytes, and the
// answer also carries what the same run would need on a GPU, so that a
// budget meant as a GPU's is not answered "fits" on the CPU's figure alone.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "profiler/base/run_config.h"
#include "profiler/predict/prediction.h"

namespace memprof {

// kNotPredicted: a program's own model (no size table): only its model
// state is predicted, so whether the rest fits is not.
enum class FitVerdict {
  kFits,
  kActivationOverflow,
  kModelStateOverflow,
  kNotPredicted
};

// Note [Fit levers]
// When the requested run does not fit, what would, each change alone from
// the requested config, in this order: a smaller micro-batch per rank (and
// the ranks that keep the global batch), the same smaller micro-batch with
// gradient accumulation keeping the global batch on the same ranks (Note
// [Accumulation lever] in fit.cc), activation checkpointing (gpt,
// resnet), the longest sequence (gpt) or the largest resolution (resnet)
// that fits at the requested micro-batch, bf16 autocast (from float32:
// mostly bfloat16 activations, at the price of the weights' bfloat16
// copies; model state unchanged), and sharding the model state
// (ZeRO, stages 1-3 at the run's ranks, each at the requested
// micro-batch; stage 1, which memprof runs, predicted on its partition,
// stages 2-3 priced). Only the levers that fit are listed. When no lever
// that memprof runs and that keeps the samples as they are (checkpointing,
// bf16 autocast, ZeRO-1; not a shorter sequence or a lower resolution,
// which change what is trained on) fits alone, their combinations are
// tried, pairs before all three, and those that fit listed: Mistral-7B at
// T = 4096 was offered only --llama.seq_len 246 where ZeRO-1 with
// checkpointing fits. Last, since it trains adapters instead of the model:
// LoRA when the model state overflows, or when no other lever fits (rank 8
// on the attention projections, on every Linear of an MLP; the base
// frozen, so model state shrinks to the base weights and the adapters'
// state). When the model state alone is over the budget no
// data-parallel or activation lever can help; only sharding and LoRA are
// tried then.
struct FitLever {
  std::string what;        // "activation checkpointing"
  std::string flags;       // "--train.activation_checkpointing blocks"
  int64_t peak_bytes = 0;  // predicted per rank
  // It changes one rank's run itself (not the micro-batch or the ranks):
  // fit --measure can confirm it with one rank.
  bool one_rank = false;
  // It trains LoRA adapters instead of the model (a different job; listed
  // last, and confirmed by fit --measure beside the first one_rank lever).
  bool adapters = false;
  // It changes the samples (a shorter sequence, a lower resolution): it
  // does not stand in for the combinations of the levers that keep them.
  bool changes_samples = false;
};
const char* FitVerdictName(FitVerdict verdict);  // "activation-overflow"

// What a run's figure is (Note [Fit on a GPU]).
struct FitDevice {
  // The predicted reserved bytes plus outside_allocator_bytes; false: the
  // predicted peak's requested bytes (outside_allocator_bytes then prices
  // FitAnswer::gpu_bytes only).
  bool gpu = false;
  int64_t outside_allocator_bytes = 0;
};
// gpu for a train.device cuda config, with `outside_allocator_bytes`.
FitDevice FitDeviceOf(const RunConfig& config, int64_t outside_allocator_bytes);

// Note [Keeping the global batch]
// A smaller micro-batch B' per rank keeps the global batch B N (B the
// requested micro-batch, N the ranks; times the K micro-batches of an
// optimizer step, unchanged) only where B' divides B N: then on B N / B'
// ranks. The lever and the verdict name the largest such B' that is at
// most the largest micro-batch that fits (B' = 1 always divides), never a
// rounded-up world that would change the global batch.
struct GlobalBatchSplit {
  int64_t micro_batch = 0;  // 0: not even micro-batch 1 fits
  int64_t ranks = 0;
};
// No split at more ranks than `largest_world` (ddp.world_size's most).
GlobalBatchSplit KeepGlobalBatch(int64_t micro_batch, int64_t world_size,
                                 int64_t largest_micro_batch,
                                 int64_t largest_world);

struct FitAnswer {
  FitVerdict verdict = FitVerdict::kFits;
  FitDevice device;
  int64_t budget_bytes = 0;
  int64_t world_size = 1;
  int64_t micro_batch = 0;  // requested, per rank
  // Figures as FitDevice makes them, per rank (the busiest under ZeRO-1).
  int64_t peak_bytes = 0;  // at the requested micro-batch
  // weights + gradients + optimizer + buckets (requested bytes, on a GPU
  // each rounded), plus the outside allowance on a GPU.
  int64_t model_state_bytes = 0;
  // Parameter elements, and those trained (not frozen by train.freeze).
  int64_t parameters = 0;
  int64_t trained_parameters = 0;
  int64_t peak1_bytes = 0;  // at micro-batch 1
  // Micro-batch 1's optimizer step (no activation live): peak1_bytes when
  // it is the peak, else its requested bytes (plus the outside allowance
  // on a GPU), a lower bound of its figure.
  int64_t optimizer1_bytes = 0;
  int64_t largest_micro_batch = 0;  // 0: not even 1 fits
  int64_t largest_peak_bytes = 0;
  // Note [Keeping the global batch], and its figure per rank (at
  // world_size: under ZeRO-1 more ranks would shard more, so an upper
  // bound there).
  GlobalBatchSplit split;
  int64_t split_peak_bytes = 0;
  // At the requested micro-batch whatever the device: the predicted peak's
  // requested bytes and the allocator's predicted most reserved.
  int64_t requested_peak_bytes = 0;
  int64_t reserved_bytes = 0;
  // reserved_bytes plus the outside allowance: what the run needs on a GPU
  // (on a GPU, peak_bytes).
  int64_t gpu_bytes = 0;
  ZeroPricing zero;                 // at world_size
  int64_t zero_peak_bytes[4] = {};  // [1..3]: stage k at micro-batch 1
  int zero_stage = 0;               // smallest stage that fits; 0: none
  // zero_stage's figure at the requested micro-batch (0 when zero_stage is
  // 0 or the micro-batch is 1), as zero_peak_bytes prices micro-batch 1.
  int64_t zero_requested_bytes = 0;
  int64_t zero3_ranks = 0;  // fewest ranks at which ZeRO-3 fits; 0: none
  // At zero3_ranks, the smallest stage that fits there (1 as memprof runs
  // it, 2 and 3 priced); 0 when zero3_ranks is.
  int zero_stage_at_ranks = 0;
  // Note [Fit levers]: empty when the requested run fits.
  std::vector<FitLever> levers;
  bool model_state_alone_overflows = false;
};

// The prediction's peak for one rank of `config` at `micro_batch` per rank.
int64_t PredictedPeakAt(const RunConfig& config, int64_t micro_batch);

// `config` at `micro_batch` per rank (no global batch) when memprof would
// run it; none when its keys refuse each other (ValidateRunConfig: a lever
// such as checkpointing beside LoRA adapters is then no lever).
std::optional<RunConfig> RunnableAt(RunConfig config, int64_t micro_batch);

// The figure of the busiest rank of `config` (validated) as `device` makes
// it: the predicted peak, or the predicted most reserved plus the outside
// allowance.
int64_t FitFigure(const RunConfig& config, const FitDevice& device);

// `config` validated; its micro-batch per rank is MicroBatch(config). The
// default device decides on requested bytes (an out-of-memory report's
// --memory-limit); `memprof fit` passes FitDeviceOf(config, ...).
FitAnswer Fit(const RunConfig& config, int64_t budget_bytes,
              const FitDevice& device = {});

// A program's own model at `budget_bytes`: kNotPredicted, with its model
// state from `prediction` (exact, from the tracked parameters and
// optimizer) and whether that alone is over the budget; the activations of
// a program's model are measured, not predicted.
FitAnswer ProgramFit(const Prediction& prediction, const RunConfig& config,
                     int64_t budget_bytes);

// The verdict with its deciding figures, one sentence ("activation-overflow:
// the model state, 216 KiB per rank, fits the 250 KiB budget; ...").
std::string FitVerdictSentence(const FitAnswer& answer);

// Every figure, a line each, for `memprof fit`.
std::string FormatFit(const FitAnswer& answer, const RunConfig& config);

}  // namespace memprof
