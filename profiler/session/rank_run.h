// RankRun: what one rank's training run produced under the hook (its
// capture, the figures analysed from it, the step records, the audit), and
// the rank report (report/rank_report.h) built from it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "profiler/base/cuda_run.h"
#include "profiler/base/run_config.h"
#include "profiler/capture/lifetime_analysis.h"
#include "profiler/predict/prediction.h"
#include "profiler/report/rank_report.h"
#include "profiler/session/redundancy_verdict.h"

namespace memprof {

struct StepRecord {
  double seconds = 0;
  double comm_seconds =
      0;  // in the Reducer's all-reduces (Note [Communication time])
  // ZeRO-1's parameter exchange after the optimizer step (Note [Parameter
  // exchange]); 0 at stage 0.
  double exchange_seconds = 0;
  // Checkpointed blocks' reruns inside backward (Note [Recomputed
  // activations] in trainer.cc); 0 without activation checkpointing.
  double recompute_seconds = 0;
  // Forward and backward passes in the step (train.grad_accum).
  int micro_batches = 1;
  double loss = 0;
  bool completed = true;  // false: cut short by out-of-memory
};

struct RankRun {
  ReportContext context;  // the process, its host and its build
  int rank = 0;
  int world_size = 1;
  std::string device = "cpu";
  std::string backend = "gloo";
  bool hooked = true;  // false: --no-hook, no memory figures
  RunConfig config;
  int64_t parameters = 0;          // number of parameter elements (P)
  int64_t trained_parameters = 0;  // of them, those that require grad
  int64_t micro_batch = 0;
  Capture capture;  // what Analysis was computed from
  Analysis analysis;
  // Reading the capture and writing the snapshot (bench/long_run.sh).
  double analysis_seconds = 0;
  Prediction prediction;  // for this rank's config and micro-batch
  std::vector<StepRecord> step_records;  // steps 1..K
  int64_t buckets = 0;                   // DDP buckets at the end
  std::vector<Redundancy> redundancy;    // weights, optimizer_state
  // ddp.zero_stage 1: every parameter's owner (Note [ZeRO-1 partition]),
  // and whether the ranks' owned parameters, gathered in the audit, cover
  // every parameter exactly once.
  std::vector<int> zero_owners;
  std::vector<int64_t> zero_partition;  // parameter elements by rank
  bool zero_covered_once = false;
  int64_t ownership_not_found = 0;
  int64_t ownership_conflicts = 0;
  // A run on a GPU (with the hook): the device's side.
  std::optional<CudaRun> cuda;
  // A cpu run with the hook: its blocks replayed through the CUDA caching
  // allocator's model (profiler/capture/cuda_replay.h).
  std::optional<CudaReplay> cuda_replay;
  bool RanOutOfMemory() const { return analysis.out_of_memory.seq >= 0; }
};

// The rank report of `run`: its figures, the prediction beside them, the
// process's context (host, pid, LibTorch, source revision).
RankReport ReportOf(const RankRun& run);

// Note [Post-mortem]
// A rank killed mid-run (SIGKILL, the OOM killer) writes no report, but its
// capture file holds every event it committed (Note [Capture file]), and
// its header the rank's context and micro-batch. The report recovered from
// it has what the capture tells: the categories live at the last recorded
// event (categories.end and post_mortem.live_bytes) and at the highest
// live total (run_peak), the step and phase in force then, every step's
// peak and time; the loss, the redundancy audit and the step's
// communication time are not recorded there (0 and empty). `killed_by`
// names the signal when the launcher saw it. Blocks still pending at the
// kill are resolved as Note [Killed capture] says.
//
// Reads DIR/capture-<r>.bin at `capture_path`; throws InputError naming it
// when it is not a capture or names no context.
RankReport RecoverRankReport(const std::string& capture_path,
                             const std::string& killed_by);

}  // namespace memprof
