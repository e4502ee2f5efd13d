// The headline of a run: one sentence that says where the peak is, what
// fills it, and the lever that would cut it most (Note [Headline]).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "profiler/base/category.h"
#include "profiler/report/run_reports.h"

namespace memprof {

// Note [Headline]
// report.md and report.html open with one sentence for the whole run:
// - the peak: the steady-state peak of the busiest rank (the highest
//   peak; the ranks that share it are named with it), its step and phase;
// - the dominant category: the one with the most bytes live at that peak;
// - the lever: of the levers memprof runs that act on the dominant
//   category, each priced by the prediction alone from the run's config,
//   the one with the lowest predicted peak, named only when that is below
//   the run's own predicted peak (prediction against prediction, never
//   against the measured figure):
//     activations, inputs, temporaries (what follows the micro-batch):
//       activation checkpointing (every model but mlp, when off) and half
//       the micro-batch per rank (rounded down) on twice the ranks, the
//       same global batch when the micro-batch is even (when it is above 1);
//     weights, gradients, optimizer_state (model state): ZeRO-1 at the
//       run's ranks (more than one rank, at stage 0);
//     ddp_buckets: gradient_as_bucket_view (when off);
//     weight_casts, unattributed: none.
struct Headline {
  std::vector<int> ranks;  // the busiest ranks, in order
  int64_t peak_bytes = 0;
  int step = 0;
  Phase phase = Phase::kIdle;
  Category dominant = Category::kWeights;
  int64_t dominant_bytes = 0;
  int64_t predicted_peak_bytes = 0;  // the run's, busiest rank
  // false: a program's own model, whose levers memprof cannot price.
  bool levers_priced = true;
  std::string lever;             // empty: none cuts the peak
  std::string lever_flags;       // "--ddp.zero_stage 1"
  int64_t lever_peak_bytes = 0;  // predicted, busiest rank
};

// Empty when no rank completed a steady-state step.
std::optional<Headline> HeadlineOf(const RunView& view);

// "Peak 250 KiB on ranks 0–1, in the optimizer phase of step 3; the
// largest part is optimizer state, 86.6 KiB (35%). The lever that cuts it
// most: ZeRO-1 at 2 ranks (--ddp.zero_stage 1), predicted peak 211 KiB
// against 250 KiB predicted for this run."
std::string HeadlineSentence(const Headline& headline);

// "rank 3", "ranks 0–7" (a run of consecutive ranks), "ranks 0, 2, 5".
std::string RanksLabel(const std::vector<int>& ranks);

}  // namespace memprof
