// Figures computed from a session's block lifetimes (Note [Block
// lifetimes]): per-category Stats, per-step and steady-state peaks with
// their breakdowns, and a per-phase timeline. Pure arithmetic: no tensors.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "profiler/capture/memory_tracker.h"

namespace memprof {

// The live bytes at one moment: right after the allocation at `seq`.
struct PeakPoint {
  int64_t total_bytes = 0;
  int64_t seq = -1;  // -1: nothing was allocated in the scope
  Phase phase = Phase::kIdle;
  int32_t step = 0;
  Breakdown bytes{};
};

struct StepFigures {
  int32_t step = 0;
  PeakPoint peak;
  Breakdown max_bytes{};  // each category's own maximum within the step
  Breakdown end_bytes{};  // live when the step ended
};

// One stretch between two phase marks.
struct Segment {
  int32_t step = 0;
  Phase phase = Phase::kIdle;
  int64_t begin_seq = 0;
  int64_t end_seq = 0;
  int64_t begin_ns = 0;  // since the session began
  int64_t end_ns = 0;
  Breakdown begin_bytes{};
  PeakPoint peak;  // seq -1 when the segment allocated nothing
  Breakdown end_bytes{};
};

// The live bytes right after the event at `seq` (an alloc or a free).
struct SeriesPoint {
  int64_t seq = 0;
  Breakdown bytes{};
};

// At most this many points per series: a longer one keeps, of every run of
// consecutive events, the points of lowest and highest total (so its peak
// and its troughs survive).
inline constexpr size_t kMaxSeriesPoints = 4096;

struct Analysis {
  std::array<Stat, kNumCategories> stats{};  // whole session, final categories
  Stat total;
  PeakPoint run_peak;  // whole session, set-up and step 1 included
  // Steady state: the steps from `steady_first_step` on (see Analyze).
  int32_t steady_first_step = 0;
  PeakPoint steady_peak;
  Breakdown steady_max{};  // each category's own maximum in the steady state
  std::vector<StepFigures> steps;  // steps 1..K
  std::vector<Segment> segments;   // in order
  // Live bytes by category over the step of the steady-state peak: the
  // value it opened with (at the seq before its first), then one point per
  // event, thinned to kMaxSeriesPoints.
  int32_t series_step = 0;  // 0: no steady-state peak
  std::vector<SeriesPoint> series;
  int64_t allocations = 0;
};

// `steady_from` is the first step of the steady state: the step after the
// last one-time allocation (step 1 creates gradients and optimizer state;
// DDP rebuilds its buckets once, in step 2). Clamped to the steps present.
Analysis Analyze(const Capture& capture, int32_t steady_from = 2);

// Live bytes by category just before the event at `seq`: the blocks
// allocated before it and not freed before it.
Breakdown LiveAt(const Capture& capture, int64_t seq);

}  // namespace memprof
