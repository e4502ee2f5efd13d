#include "profiler/session/rank_run.h"

#include <cstdio>
#include <optional>

#include "profiler/base/errors.h"
#include "profiler/capture/cuda_replay.h"
#include "profiler/predict/cuda_prediction.h"
#include "profiler/predict/fit.h"
#include "profiler/predict/scope_prediction.h"
#include "profiler/session/program_meta.h"

namespace memprof {
namespace {

PeakFigures PeakOf(const PeakPoint& peak) {
  return {peak.total_bytes, peak.phase, peak.step, peak.seq, peak.bytes};
}

std::string Hex(uint64_t value) {
  char text[20];
  std::snprintf(text, sizeof text, "%016llx",
                static_cast<unsigned long long>(value));
  return text;
}

std::optional<ZeroFigures> ZeroOf(const RankRun& run) {
  if (run.zero_owners.empty()) return std::nullopt;
  ZeroFigures z;
  z.partition_parameters = run.zero_partition;
  for (int owner : run.zero_owners) z.owned_tensors += owner == run.rank;
  z.covered_once = run.zero_covered_once;
  RunConfig replicated = run.config;
  replicated.ddp.zero_stage = 0;
  z.replicated_optimizer_state_bytes =
      Predict(replicated).bytes[Index(Category::kOptimizerState)];
  return z;
}

// Activations at the start of backward in the steady-state peak's step
// (Note [Checkpointed activations]).
std::optional<CheckpointingFigures> CheckpointingOf(const RankRun& run) {
  if (run.config.train.activation_checkpointing == "none") return std::nullopt;
  CheckpointingFigures c;
  c.mode = run.config.train.activation_checkpointing;
  for (const Segment& s : run.analysis.segments) {
    if (s.step == run.analysis.steady_peak.step &&
        s.phase == Phase::kBackward) {
      c.held_bytes = s.begin_bytes[Index(Category::kActivations)];
      break;
    }
  }
  // Early in backward every tensor forward saved is still held.
  c.predicted_held_bytes =
      run.prediction.early_backward.bytes[Index(Category::kActivations)];
  return c;
}

// The measured scopes (Note [Named scopes]), each beside the size table's
// prediction for it when the table names it.
std::vector<ScopeReport> ScopesOf(const RankRun& run) {
  const std::vector<ScopePrediction> predicted =
      PredictScopes(run.prediction.table);
  std::vector<ScopeReport> scopes;
  for (const ScopeFigures& measured : run.analysis.scopes) {
    ScopeReport scope{measured.name, measured.activations_bytes,
                      measured.temporaries_peak_bytes, std::nullopt};
    for (const ScopePrediction& p : predicted) {
      if (p.name == measured.name) {
        scope.predicted_activations_bytes = p.activations_bytes;
      }
    }
    scopes.push_back(std::move(scope));
  }
  return scopes;
}

// Every step: its record from the loop, or, for a rank recovered from its
// capture (no records), its time from the marks, cut short when last
// unless the rank went past it (its last mark is after the loop: step 0).
// A step cut short is never in the steady state: its figures are partial.
std::vector<StepReport> StepsOf(const RankRun& run) {
  const Analysis& a = run.analysis;
  std::vector<StepReport> steps;
  for (size_t i = 0; i < a.step_peaks.size(); ++i) {
    const StepPeak& peak = a.step_peaks[i];
    StepReport step;
    step.step = static_cast<int>(i) + 1;
    if (i < run.step_records.size()) {
      const StepRecord& record = run.step_records[i];
      step.completed = record.completed;
      step.seconds = record.seconds;
      step.comm_seconds = record.comm_seconds;
      step.exchange_seconds = record.exchange_seconds;
      step.recompute_seconds = record.recompute_seconds;
      step.micro_batches = record.micro_batches;
      step.loss = record.loss;
    } else {
      step.completed = i + 1 < a.step_peaks.size() || a.last_mark.step == 0;
      step.seconds = static_cast<double>(peak.end_ns - peak.begin_ns) * 1e-9;
    }
    step.steady_state = step.completed && step.step >= a.steady_from;
    step.peak_bytes = peak.total_bytes;
    step.peak_phase = peak.phase;
    step.peak_seq = peak.seq;
    steps.push_back(step);
  }
  return steps;
}

std::vector<StepDetail> StepDetailsOf(const Analysis& a) {
  std::vector<StepDetail> details;
  for (const StepFigures& s : a.steps) {
    details.push_back({s.step, s.peak.bytes, s.max_bytes, s.end_bytes});
  }
  return details;
}

std::vector<TimelineSegment> TimelineOf(const Analysis& a) {
  std::vector<TimelineSegment> timeline;
  for (const Segment& seg : a.segments) {
    timeline.push_back({seg.step, seg.phase, seg.begin_seq, seg.end_seq,
                        seg.begin_ns / 1000, seg.end_ns / 1000, seg.begin_bytes,
                        seg.peak.total_bytes, seg.peak.seq, seg.peak.bytes,
                        seg.end_bytes, seg.micro_batch});
  }
  return timeline;
}

LiveSeries SeriesOf(const Analysis& a) {
  LiveSeries series;
  series.step = a.series_step;
  for (const SeriesPoint& point : a.series) {
    series.seq.push_back(point.seq);
    for (Category c : kAllCategories) {
      series.bytes[Index(c)].push_back(point.bytes[Index(c)]);
    }
  }
  return series;
}

std::vector<RedundancyFigures> RedundancyOf(const RankRun& run) {
  std::vector<RedundancyFigures> out;
  for (const Redundancy& entry : run.redundancy) {
    RedundancyFigures figures{entry.category,
                              entry.bytes,
                              entry.identical_across_ranks,
                              entry.redundant_bytes,
                              {}};
    for (uint64_t h : entry.rank_hashes) {
      figures.rank_hashes.push_back(Hex(h));
    }
    out.push_back(std::move(figures));
  }
  return out;
}

std::optional<OutOfMemoryFigures> OutOfMemoryOf(const RankRun& run) {
  if (!run.RanOutOfMemory()) return std::nullopt;
  const OutOfMemory& oom = run.analysis.out_of_memory;
  return OutOfMemoryFigures{
      oom.limit_bytes,
      oom.requested_bytes,
      oom.live_bytes,
      oom.seq,
      oom.phase,
      oom.step,
      run.analysis.out_of_memory_bytes,
      run.config.model == "program"
          ? ProgramFit(run.prediction, run.config, oom.limit_bytes)
          : Fit(run.config, oom.limit_bytes),
      oom.by_system};
}

}  // namespace

RankReport ReportOf(const RankRun& run) {
  const Analysis& a = run.analysis;
  RankReport r;
  r.context = run.context;
  r.context.session_start_unix_us = run.capture.begin_unix_us;
  r.parameters = run.parameters;
  r.predicted_parameters = run.prediction.parameters;
  r.trained_parameters = run.trained_parameters;
  r.predicted_trained_parameters = run.prediction.trained_parameters;
  r.micro_batch = run.micro_batch;
  for (Category c : kAllCategories) {
    const int i = Index(c);
    r.categories[i] = {a.steady_peak.bytes[i],  a.steady_max[i],
                       run.prediction.bytes[i], a.stats[i].current,
                       a.stats[i].allocated,    a.stats[i].freed};
  }
  r.buffers_bytes = a.buffer_bytes;
  r.peak = PeakOf(a.steady_peak);
  r.steady_first_step = a.steady_first_step;
  r.steady_from = a.steady_from;
  const PredictedMoment& predicted = run.prediction.Peak();
  r.predicted_peak = {predicted.Total(), predicted.phase, predicted.what,
                      predicted.bytes};
  r.run_peak = PeakOf(a.run_peak);
  r.steps = StepsOf(run);
  r.step_details = StepDetailsOf(a);
  r.ddp = {run.buckets, run.config.ddp.bucket_cap_mb,
           run.config.ddp.gradient_as_bucket_view};
  r.redundancy = RedundancyOf(run);
  r.zero = ZeroOf(run);
  r.checkpointing = CheckpointingOf(run);
  r.scopes = ScopesOf(run);
  r.out_of_memory = OutOfMemoryOf(run);
  r.timeline = TimelineOf(a);
  r.series = SeriesOf(a);
  r.hook = {run.hooked,    a.allocations,           a.total.allocated,
            a.total.freed, run.ownership_not_found, run.ownership_conflicts};
  if (run.cuda) {
    r.cuda_run = run.cuda;
    const CudaPrediction predicted = PredictOnCuda(run.prediction, run.config);
    r.cuda_run->predicted_at_peak = predicted.at_peak;
    r.cuda_run->predicted_peak_reserved = predicted.peak_reserved;
  } else if (run.hooked) {
    r.cuda_replay = run.cuda_replay;  // what its blocks would cost on a GPU
  }
  return r;
}

RankReport RecoverRankReport(const std::string& capture_path,
                             const std::string& killed_by) {
  RankRun run;
  std::string meta_json;
  run.capture = CaptureFromFile(capture_path, &meta_json);
  const nlohmann::ordered_json meta =
      nlohmann::ordered_json::parse(meta_json, nullptr, false);
  if (meta.is_discarded() || !meta.is_object() || !meta.contains("context")) {
    throw InputError(capture_path +
                     ": the header names no rank context (a capture of "
                     "profile --out writes one); nothing to recover");
  }
  run.context = ContextFromJson(meta["context"], capture_path + " (header)");
  run.rank = run.context.rank;
  run.world_size = run.context.world_size;
  run.device = run.context.device;
  run.backend = run.context.backend;
  run.config = run.context.config;
  run.micro_batch = meta.value("micro_batch", int64_t{0});
  if (run.config.model != "program") {
    run.prediction = Predict(run.config, run.rank, run.context.cpu_threads);
  } else if (std::optional<ProgramMeta> program =
                 ReadProgramMeta(ProgramMetaPath(capture_path));
             program && program->context.pid == run.context.pid &&
             program->context.session_start_unix_us ==
                 run.capture.begin_unix_us) {
    // Note [Program meta]: what the program had tracked by its last
    // change, of this very session.
    run.context = program->context;
    run.config = run.context.config;
    run.micro_batch = program->micro_batch;
    run.prediction =
        PredictProgram(run.config, std::move(program->table), run.micro_batch,
                       run.rank, program->reducer);
  }
  std::string ending = killed_by;
  if (killed_by == kUnknownEnding && run.config.model == "program") {
    // Note [Program ending]: what the session said of its end, if it could.
    const std::string said =
        ReadProgramEnding(ProgramEndingPath(capture_path), run.context.pid,
                          run.capture.begin_unix_us);
    if (!said.empty()) ending = "failed: " + said;
  }
  run.parameters = run.prediction.parameters;
  run.trained_parameters = run.prediction.trained_parameters;
  CudaReplaySink replay;
  run.analysis = Analyze(run.capture, AnalysisOptions{}, {&replay});
  run.cuda_replay = replay.Result();
  RankReport report = ReportOf(run);
  const Analysis& a = run.analysis;
  PostMortemFigures post;
  post.killed_by = ending;
  post.records = a.records;
  post.torn_record_dropped = a.torn_record;
  post.cut_short = a.cut_short;
  post.last_seq = a.end_seq - 1;
  post.step = a.last_mark.step;
  post.phase = a.last_mark.phase;
  for (Category c : kAllCategories) {
    post.live_bytes[Index(c)] = a.stats[Index(c)].current;
  }
  report.post_mortem = post;
  return report;
}

}  // namespace memprof
