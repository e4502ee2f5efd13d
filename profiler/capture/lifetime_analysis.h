// Figures computed from a session's capture file (Note [Block lifetimes],
// Note [Capture file]): per-category Stats, per-step and steady-state peaks
// with their breakdowns, and a per-phase timeline. Pure arithmetic: no
// tensors.
//
// Note [Streaming analysis]
// The file is read twice, front to back, holding the blocks live at the
// moment and a fixed window, never the run. Pass 1 replays the records to
// learn each block's final category (what ownership, the phase rule, its
// free or the session's end made it) and writes it, one byte per alloc
// record, to a side file at the block's alloc ordinal (a 1 MiB window of
// recent ones in memory; a long-lived block's byte is written in place
// when it is freed), so the side file is bounded by the records read; it
// also finds the steady state's first step and, from the
// category-free live totals, the step of the steady-state peak. Pass 2
// replays the records again with those final categories: every figure
// below, the kept steps' segments and breakdowns, the series, and the
// blocks handed to each sink (the snapshot, the CUDA replay) in seq order.
// Memory: the live blocks, one compact row per step (StepPeak), the kept
// steps' figures and the buffers; a run of 20,000 steps costs what a run
// of 200 does, plus 24 bytes a step (bench/long_run.sh).
//
// Note [Kept steps]
// Per-step detail (the timeline's segments, each step's breakdowns, the
// snapshot's events, the trace) is kept for step 0 (set-up and the end),
// step 1 (the one-time allocations), the step of the steady-state peak
// (the step the report explains) and the last `last` steps (default 2:
// the steady state as it ended), or for every step (profile --keep-steps
// all), as _record_memory_history's max_entries bounds PyTorch's. Whole-run
// figures (stats, peaks, steady-state maxima, every step's peak) cover
// every step whatever is kept.
//
// Note [Late bucket frees]
// After DDP rebuilds its buckets (step 2), the old bucket buffers die when
// the last reference drops, and a Gloo worker thread keeps one until it
// loops again after its last all-reduce: on a loaded machine that can be a
// step later. The DDP engine settles the group before the rebuild (Note
// [Settled collectives]), which makes the free happen there; the steady
// state still starts only after the step in which the last replaced
// bucket buffer (kFlagBucket) was freed, whatever holds it.
//
// Note [Killed capture]
// A capture without its end record is a rank killed mid-run (SIGKILL, the
// OOM killer). It is analysed as if the session ended after its last
// committed record: blocks still pending then become activations when the
// last mark is a forward (the phase rule backward would have applied, as
// at an out-of-memory refusal) and unattributed otherwise; end_ns is the
// last mark's time.
//
// Note [Named scopes]
// A program names stretches of its loop (MemoryTracker::EnterScope, a
// model's blocks: "h.3"); scopes nest. Their figures are taken over one
// step, the step of the steady-state peak (Analysis::series_step), and
// only for the scopes opened in it. A block belongs to every scope open
// at its allocation, by seq, whatever thread allocated it (as the phase
// rule goes by seq), so an outer scope's figures include its inner ones'
// (a scope opened twice in one chain counts a block once): a table of
// nested scopes reads like inclusive time, and its rows need not sum to a
// category's total. Per scope name:
//   activations_bytes: the blocks allocated inside it in that step whose
//     final category is activations, live when the step's backward begins
//     (a checkpointed block's rerun, inside backward, adds nothing);
//   temporaries_peak_bytes: over each opening of it in that step, the
//     highest live bytes of the temporaries allocated inside that opening,
//     while it is open; the largest over its openings.
// A scope left open when the capture ends (a killed rank) is closed there.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "profiler/base/keep_steps.h"
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

// A named scope's figures (Note [Named scopes]).
struct ScopeFigures {
  std::string name;
  int64_t activations_bytes = 0;
  int64_t temporaries_peak_bytes = 0;
};

// Every step's peak, kept or not.
struct StepPeak {
  int64_t total_bytes = 0;
  int64_t seq = -1;  // -1: nothing was allocated in the step
  Phase phase = Phase::kIdle;
  int64_t begin_ns = 0;  // its first mark, since the session began
  int64_t end_ns = 0;    // the next step's first mark (or the end)
};

// A kept step's figures (Note [Kept steps]).
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
  // Inputs, forward and backward: the micro-batch of the step they belong
  // to, from 1 (Note [Micro-batch index]); 0 for the step's optimizer and
  // zero_grad and outside the loop.
  int32_t micro_batch = 0;
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

// A block as a sink sees it: final category; free_seq kLive until freed.
// Sinks get every alloc and free of the session in seq order, and every
// phase mark and scope before the events it governs.
class CaptureSink {
 public:
  virtual ~CaptureSink() = default;
  // `kept`: the mark's step keeps its detail (Note [Kept steps]).
  virtual void OnMark(const PhaseMark& mark, bool kept) {
    (void)mark;
    (void)kept;
  }
  virtual void OnAlloc(const Lifetime& block) = 0;
  virtual void OnFree(const Lifetime& block) = 0;  // free_seq set
  // A named scope opens (its full name) or the innermost open one closes,
  // before the events that follow it (Note [Named scopes]).
  virtual void OnScopeEnter(const std::string& name) { (void)name; }
  virtual void OnScopeExit() {}
  // After the last record: the blocks live then, by address.
  virtual void OnEnd(const std::unordered_map<uint64_t, Lifetime>& live) {
    (void)live;
  }
};

struct AnalysisOptions {
  // The last step with a one-time allocation the loop knows of (DDP's
  // bucket rebuild); the steady state starts after it, and after the step
  // of the last freed bucket buffer (Note [Late bucket frees]).
  int32_t one_time_through_step = 1;
  KeepSteps keep;
};

struct Analysis {
  std::array<Stat, kNumCategories> stats{};  // whole session, final categories
  Stat total;
  PeakPoint run_peak;  // whole session, set-up and step 1 included
  // Steady state: the steps from `steady_first_step` through
  // `steady_last_step` (see Analyze): the last step too, unless the capture
  // was killed inside it and a whole step precedes it in the steady state
  // (a step cut short has partial figures).
  int32_t steady_first_step = 0;
  int32_t steady_last_step = 0;
  // Where the steady state begins: the step after the last one-time step
  // (AnalysisOptions). A run that ended before it reached no steady state;
  // steady_first_step is then its last step, whose figures are all there
  // are.
  int32_t steady_from = 1;
  PeakPoint steady_peak;
  Breakdown steady_max{};  // each category's own maximum in the steady state
  std::vector<StepPeak> step_peaks;  // steps 1..K, every one
  std::vector<StepFigures> steps;    // the kept steps among 1..K, in order
  std::vector<Segment> segments;     // the kept steps' segments, in order
  // Live bytes by category over the step of the steady-state peak: the
  // value it opened with (at the seq before its first), then one point per
  // event, thinned to kMaxSeriesPoints.
  int32_t series_step = 0;  // 0: no steady-state peak
  std::vector<SeriesPoint> series;
  // The scopes opened in series_step, in the order of their first opening
  // (Note [Named scopes]).
  std::vector<ScopeFigures> scopes;
  int64_t allocations = 0;
  // Module buffers live at the end (kFlagBuffer), inside weights.
  int64_t buffer_bytes = 0;
  // Live bytes by category just before the refused allocation (when
  // out_of_memory.seq >= 0).
  Breakdown out_of_memory_bytes{};
  OutOfMemory out_of_memory;  // the capture's first refusal
  int32_t last_step = 0;
  PhaseMark last_mark;  // in force at the last event
  int64_t end_seq = 0;
  int64_t end_ns = 0;
  bool killed = false;       // no end record (Note [Killed capture])
  bool torn_record = false;  // a torn record was dropped at the end
  // The file ends before records it should hold: the figures are those of
  // the records before the cut (Note [Damaged capture]).
  bool cut_short = false;
  int64_t records = 0;  // committed records read
};

// Reads the capture's file twice (Note [Streaming analysis]); `sinks` get
// the blocks in seq order during the second pass. Throws InputError for a
// file whose records contradict each other (a free of a block never
// allocated, a step beyond its records) or whose header is damaged (Note
// [Damaged capture]).
Analysis Analyze(const Capture& capture, const AnalysisOptions& options = {},
                 const std::vector<CaptureSink*>& sinks = {});

// A capture a killed rank left: its file at `path`, nothing else known
// but what its header says (its text to `meta_json` when not null).
Capture CaptureFromFile(const std::string& path,
                        std::string* meta_json = nullptr);

}  // namespace memprof
