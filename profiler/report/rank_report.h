// RankReport: one rank's figures, the schema of rank-<r>.json
// (memprof.rank/1). This struct is the schema: ToJson is the only code that
// writes the file and RankReportFromJson the only code that reads it;
// reports/SCHEMA.md documents it and tests/report/schema_doc_test.cc keeps
// the two in step. Every reader of a run (report, check, baseline, fit
// --measure, sweep, the launcher, rank 0's gather) goes through it, and the
// renderers take it, never JSON. Torch-free.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiler/base/category.h"
#include "profiler/base/cuda_allocator_model.h"
#include "profiler/base/cuda_run.h"
#include "profiler/base/run_config.h"
#include "profiler/predict/fit.h"

namespace memprof {

// The largest rank-<r>.json memprof reads (Note [File size caps] in
// profiler/base/regular_file.h).
inline constexpr int64_t kMaxRankReportBytes = int64_t{64} << 20;

// context.cuda (memprof.rank/1.1): memprof's CUDA parts and this machine's
// devices; absent from 1.0 reports, read as not compiled.
struct CudaContext {
  bool compiled = false;
  bool available = false;
  int devices = 0;
  std::string status;  // in words: the devices, or why there are none
};

struct ReportContext {
  int rank = 0;
  int world_size = 1;
  std::string device = "cpu";
  std::string backend = "gloo";
  std::string libtorch_version;
  CudaContext cuda;
  std::string git_sha;
  std::string hostname;
  int64_t pid = 0;
  int64_t session_start_unix_us = 0;  // the hook's session, wall clock
  // The threads its CPU kernels use (at::get_num_threads()), which size
  // their per-thread buffers in the prediction; 0: a GPU rank, or not
  // recorded (before memprof.rank/1.15).
  int cpu_threads = 0;
  RunConfig config;
};

// categories.<c>: each category's figures.
struct CategoryFigures {
  int64_t measured_bytes = 0;   // live at the steady-state peak
  int64_t peak_bytes = 0;       // its own maximum in the steady state
  int64_t predicted_bytes = 0;  // the prediction for this rank
  int64_t end_bytes = 0;        // live when the run ended
  int64_t allocated_bytes = 0;  // allocated over the whole run
  int64_t freed_bytes = 0;
};

// The live bytes right after the allocation at `seq`.
struct PeakFigures {
  int64_t total_bytes = 0;
  Phase phase = Phase::kIdle;
  int step = 0;
  int64_t seq = -1;  // -1: nothing was allocated in the scope
  Breakdown breakdown{};
};

struct PredictedPeak {
  int64_t total_bytes = 0;
  Phase phase = Phase::kIdle;
  std::string what;  // which moment of the step the prediction describes
  Breakdown breakdown{};
};

// ddp.zero_stage 1 (Note [ZeRO-1 partition]).
struct ZeroFigures {
  int stage = 1;
  // Parameter elements whose optimizer state each rank holds, by rank.
  std::vector<int64_t> partition_parameters;
  int64_t owned_tensors = 0;  // parameter tensors this rank owns
  // The ranks' optimizers together hold every parameter exactly once
  // (gathered in the audit).
  bool covered_once = false;
  // Optimizer state this rank would hold under plain replication
  // (predicted: the size table, all parameters).
  int64_t replicated_optimizer_state_bytes = 0;
};

// train.activation_checkpointing blocks (Note [Checkpointed activations]):
// the activations forward leaves for backward, measured and predicted; the
// activations' peak, a block's rerun included, is categories.activations.
struct CheckpointingFigures {
  std::string mode = "blocks";
  // Activations live when backward starts, in the steady-state peak's step.
  int64_t held_bytes = 0;
  int64_t predicted_held_bytes = 0;  // the table's kSaved rows
};

// scopes[] (since memprof.rank/1.10): a named scope's figures over the
// steady-state peak's step (Note [Named scopes] in
// profiler/capture/lifetime_analysis.h).
struct ScopeReport {
  std::string name;
  int64_t activations_bytes = 0;
  int64_t temporaries_peak_bytes = 0;
  // The size table's rows the scope's forward saves; nullopt: no table, or
  // none for this scope.
  std::optional<int64_t> predicted_activations_bytes;
};

struct StepReport {
  int step = 0;  // 1..K
  bool steady_state = false;
  bool completed = true;  // false: cut short by out-of-memory
  double seconds = 0;
  double comm_seconds = 0;  // in all-reduces (Note [Communication time])
  // ZeRO-1's parameter exchange (Note [Parameter exchange]); 0 at stage 0.
  double exchange_seconds = 0;
  // Checkpointed blocks' reruns inside backward (since memprof.rank/1.5);
  // 0 without activation checkpointing.
  double recompute_seconds = 0;
  // Forward and backward passes in the step, each over a micro-batch
  // (train.grad_accum; since memprof.rank/1.12, 1 before).
  int micro_batches = 1;
  double loss = 0;
  int64_t peak_bytes = 0;
  Phase peak_phase = Phase::kIdle;
  int64_t peak_seq = -1;
};

// A kept step's breakdowns (Note [Kept steps]); written into its steps[]
// entry.
struct StepDetail {
  int step = 0;
  Breakdown breakdown{};  // at the step's peak
  Breakdown max_bytes{};  // each category's own maximum within the step
  Breakdown end_bytes{};  // live when the step ended
};

// One stretch of the run between two phase marks (kept steps only).
struct TimelineSegment {
  int step = 0;
  Phase phase = Phase::kIdle;
  int64_t begin_seq = 0;
  int64_t end_seq = 0;
  int64_t begin_us = 0;  // since the session began
  int64_t end_us = 0;
  Breakdown begin_bytes{};
  int64_t peak_bytes = 0;
  int64_t peak_seq = -1;  // -1: the segment allocated nothing
  Breakdown peak_breakdown{};
  Breakdown end_bytes{};
  // Inputs, forward, backward: the step's micro-batch, from 1; 0 for
  // optimizer and zero_grad and outside the loop (since memprof.rank/1.12;
  // 1 or 0 before).
  int micro_batch = 0;
};

// Live bytes by category over the step of the steady-state peak, one point
// per event (thinned): bytes[c][i] after the event seq[i].
struct LiveSeries {
  int step = 0;  // 0: no steady-state peak
  std::vector<int64_t> seq;
  std::array<std::vector<int64_t>, kNumCategories> bytes;
};

struct DdpFigures {
  int64_t buckets = 0;
  double bucket_cap_mb = 0;
  bool gradient_as_bucket_view = false;
};

// redundancy.<category>: is this rank's copy bit-identical on every rank?
struct RedundancyFigures {
  Category category = Category::kWeights;
  int64_t bytes = 0;  // this rank's copy
  bool identical_across_ranks = false;
  int64_t redundant_bytes = 0;  // (N - 1) * bytes when identical, else 0
  std::vector<std::string> rank_hashes;  // XXH3-64 per rank, 16 hex digits
};

// out_of_memory: where --memory-limit refused an allocation, and the fit
// verdict for the limit as values (renderers write the sentences).
struct OutOfMemoryFigures {
  int64_t limit_bytes = 0;
  int64_t requested_bytes = 0;
  int64_t live_bytes = 0;
  int64_t seq = 0;
  Phase phase = Phase::kIdle;
  int step = 0;           // 0: before the first step
  Breakdown breakdown{};  // live bytes by category at the refusal
  FitAnswer fit;          // Fit(config, limit_bytes)
  // The system refused it, not --memory-limit (since memprof.rank/1.4):
  // limit_bytes is then the machine's memory.
  bool by_system = false;
};

struct HookFigures {
  bool installed = true;  // false: --no-hook, step times only
  int64_t allocations = 0;
  int64_t allocated_bytes = 0;
  int64_t freed_bytes = 0;
  int64_t ownership_not_found = 0;
  int64_t ownership_conflicts = 0;
};

// post_mortem (since memprof.rank/1.7): a rank killed mid-run whose report
// was recovered from its capture file (Note [Post-mortem]); the highest
// live total is run_peak, the live bytes at the end are categories.end.
// PostMortemFigures::killed_by of a rank recovered by `memprof report`,
// which cannot tell how it ended (its launcher could).
inline constexpr const char* kUnknownEnding = "unknown";

struct PostMortemFigures {
  // How the rank ended: "signal 9 (Killed)", "stopped by the launcher",
  // "exited with code 3" (on its own, without its report); kUnknownEnding
  // when not told.
  std::string killed_by;
  int64_t records = 0;  // committed records read
  bool torn_record_dropped = false;
  // The capture file ends before records it should hold (since 1.8): the
  // figures are those before the cut (Note [Damaged capture]).
  bool cut_short = false;
  int64_t last_seq = 0;  // the last recorded event
  int step = 0;          // the step and phase in force then
  Phase phase = Phase::kIdle;
  Breakdown live_bytes{};  // live then, by category
};

struct RankReport {
  ReportContext context;
  std::optional<PostMortemFigures> post_mortem;
  int64_t parameters = 0;  // parameter elements (P), counted on the module
  int64_t predicted_parameters = 0;  // from the size table
  // Those that require grad (not frozen: Note [Frozen parameters]), on the
  // module and in the size table; equal to the two above when none is
  // frozen.
  int64_t trained_parameters = 0;
  int64_t predicted_trained_parameters = 0;
  int64_t micro_batch = 0;
  std::array<CategoryFigures, kNumCategories> categories{};
  int64_t buffers_bytes = 0;  // module buffers, a sub-figure of weights
  PeakFigures peak;           // steady state
  int steady_first_step = 0;  // the steady state's first step
  // Where the steady state begins; above steady_first_step in a run that
  // ended before it (ReachedSteadyState).
  int steady_from = 0;
  PredictedPeak predicted_peak;
  PeakFigures run_peak;           // whole run, set-up and step 1 included
  std::vector<StepReport> steps;  // every step
  std::vector<StepDetail> step_details;  // the kept steps, in order
  DdpFigures ddp;
  std::vector<RedundancyFigures> redundancy;  // weights, optimizer_state
  std::optional<OutOfMemoryFigures> out_of_memory;
  std::vector<TimelineSegment> timeline;
  LiveSeries series;
  HookFigures hook;
  // cuda_replay (since memprof.rank/1.1): this run's blocks replayed through
  // the CUDA caching allocator's model (profiler/capture/cuda_replay.h),
  // what the same allocations would cost on a GPU. Absent: --no-hook, 1.0.
  std::optional<CudaReplay> cuda_replay;
  // cuda_run (since memprof.rank/1.2): a run on a GPU, from the device's
  // side (profiler/base/cuda_run.h). Absent: a cpu run, --no-hook.
  std::optional<CudaRun> cuda_run;
  // zero (since memprof.rank/1.3): ddp.zero_stage 1's partition. Absent at
  // stage 0.
  std::optional<ZeroFigures> zero;
  // checkpointing (since memprof.rank/1.5): activation checkpointing's
  // figures. Absent without it.
  std::optional<CheckpointingFigures> checkpointing;
  // The scopes opened in the steady-state peak's step, in order of first
  // opening; empty when none was.
  std::vector<ScopeReport> scopes;

  const CategoryFigures& Of(Category c) const { return categories[Index(c)]; }
};

nlohmann::ordered_json ToJson(const RankReport& report);
// `with_steps` false: `steps` is an empty array (what a summary or a
// streaming writer fills in itself).
nlohmann::ordered_json ToJson(const RankReport& report, bool with_steps);
// The entries of the kept steps (Note [Kept steps]), as ToJson writes them.
nlohmann::ordered_json KeptStepsJson(const RankReport& report);
// ToJson(report) written to `path` as it is made, each step's entry on its
// own, never the whole tree at once (Note [Streaming analysis]); the
// content goes to a temporary name first (DocumentWriter). Throws
// std::runtime_error naming the path.
void WriteRankReport(const RankReport& report, const std::string& path);
// The context block alone (a capture file's header carries it).
nlohmann::ordered_json ContextJson(const ReportContext& context);
// Reads a context block as RankReportFromJson does; throws InputError
// naming `origin`.
ReportContext ContextFromJson(const nlohmann::ordered_json& context,
                              const std::string& origin);

// Every check the renderers and the gate rely on: types, ranges (no
// negative byte count, rank < world_size, phases and categories by name,
// steps in order), the schema's major version. Throws InputError
// "ORIGIN: JSON.PATH: REASON; REMEDY". Members the struct does not hold are
// ignored (files of a later minor version).
RankReport RankReportFromJson(const nlohmann::ordered_json& doc,
                              const std::string& origin);
RankReport ParseRankReport(const std::string& text, const std::string& origin);
// The text of the rank report at `path`, at most kMaxRankReportBytes
// (Note [File size caps] in profiler/base/regular_file.h); InputError
// naming the file otherwise.
std::string ReadRankReportText(const std::string& path);
// Reads and parses the file at `path` (named in every error).
RankReport ReadRankReport(const std::string& path);

// Throws InputError naming `origin` unless `report` has memory figures (a
// --no-hook run has step times only): what report, check and baseline need.
void RequireMemoryFigures(const RankReport& report, const std::string& origin);

// DIR/rank-<r>.json: the one place the name is built.
std::string RankReportPath(const std::string& dir, int rank);

}  // namespace memprof
