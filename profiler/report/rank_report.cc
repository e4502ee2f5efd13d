#include "profiler/report/rank_report.h"

#include <filesystem>

#include "profiler/base/document_writer.h"
#include "profiler/base/errors.h"
#include "profiler/base/schema_version.h"
#include "profiler/report/breakdown_json.h"

namespace memprof {
namespace {

using Json = nlohmann::ordered_json;

Json PeakJson(const PeakFigures& peak, const char* scope) {
  return Json{{"total_bytes", peak.total_bytes},
              {"phase", PhaseName(peak.phase)},
              {"step", peak.step},
              {"seq", peak.seq},
              {"breakdown", BreakdownJson(peak.breakdown)},
              {"scope", scope}};
}

Json CategoriesJson(const RankReport& r) {
  Json categories = Json::object();
  for (Category c : kAllCategories) {
    const CategoryFigures& f = r.Of(c);
    Json entry{
        {"measured_bytes", f.measured_bytes},   {"peak_bytes", f.peak_bytes},
        {"predicted_bytes", f.predicted_bytes}, {"end_bytes", f.end_bytes},
        {"allocated_bytes", f.allocated_bytes}, {"freed_bytes", f.freed_bytes}};
    if (c == Category::kWeights) entry["buffers_bytes"] = r.buffers_bytes;
    categories[CategoryName(c)] = entry;
  }
  return categories;
}

Json ZeroJson(const std::optional<ZeroFigures>& zero) {
  if (!zero) return nullptr;
  return Json{{"stage", zero->stage},
              {"partition_parameters", zero->partition_parameters},
              {"owned_tensors", zero->owned_tensors},
              {"covered_once", zero->covered_once},
              {"replicated_optimizer_state_bytes",
               zero->replicated_optimizer_state_bytes}};
}

Json CheckpointingJson(const std::optional<CheckpointingFigures>& c) {
  if (!c) return nullptr;
  return Json{{"mode", c->mode},
              {"held_bytes", c->held_bytes},
              {"predicted_held_bytes", c->predicted_held_bytes}};
}

Json ScopesJson(const std::vector<ScopeReport>& scopes) {
  Json out = Json::array();
  for (const ScopeReport& s : scopes) {
    Json predicted = nullptr;
    if (s.predicted_activations_bytes) {
      predicted = *s.predicted_activations_bytes;
    }
    out.push_back(Json{{"name", s.name},
                       {"activations_bytes", s.activations_bytes},
                       {"temporaries_peak_bytes", s.temporaries_peak_bytes},
                       {"predicted_activations_bytes", predicted}});
  }
  return out;
}

Json PostMortemJson(const std::optional<PostMortemFigures>& p) {
  if (!p) return nullptr;
  return Json{{"killed_by", p->killed_by},
              {"records", p->records},
              {"torn_record_dropped", p->torn_record_dropped},
              {"cut_short", p->cut_short},
              {"last_seq", p->last_seq},
              {"step", p->step},
              {"phase", PhaseName(p->phase)},
              {"live_bytes", BreakdownJson(p->live_bytes)}};
}

Json StepJson(const StepReport& s, const StepDetail* detail) {
  Json step{{"step", s.step},
            {"steady_state", s.steady_state},
            {"completed", s.completed},
            {"seconds", s.seconds},
            {"comm_seconds", s.comm_seconds},
            {"exchange_seconds", s.exchange_seconds},
            {"recompute_seconds", s.recompute_seconds},
            {"micro_batches", s.micro_batches},
            {"loss", s.loss},
            {"peak_bytes", s.peak_bytes},
            {"peak_phase", PhaseName(s.peak_phase)},
            {"peak_seq", s.peak_seq}};
  if (detail != nullptr) {
    step["breakdown"] = BreakdownJson(detail->breakdown);
    step["max_bytes"] = BreakdownJson(detail->max_bytes);
    step["end_bytes"] = BreakdownJson(detail->end_bytes);
  }
  return step;
}

Json SegmentJson(const TimelineSegment& seg) {
  return Json{{"step", seg.step},
              {"phase", PhaseName(seg.phase)},
              {"micro_batch", seg.micro_batch},
              {"begin_seq", seg.begin_seq},
              {"end_seq", seg.end_seq},
              {"begin_us", seg.begin_us},
              {"end_us", seg.end_us},
              {"begin_bytes", BreakdownJson(seg.begin_bytes)},
              {"peak_bytes", seg.peak_bytes},
              {"peak_seq", seg.peak_seq},
              {"peak_breakdown", BreakdownJson(seg.peak_breakdown)},
              {"end_bytes", BreakdownJson(seg.end_bytes)}};
}

Json SeriesJson(const LiveSeries& series) {
  Json bytes = Json::object();
  for (Category c : kAllCategories) {
    bytes[CategoryName(c)] = series.bytes[Index(c)];
  }
  return Json{{"step", series.step}, {"seq", series.seq}, {"bytes", bytes}};
}

Json RedundancyJson(const std::vector<RedundancyFigures>& redundancy) {
  Json out = Json::object();
  for (const RedundancyFigures& entry : redundancy) {
    out[CategoryName(entry.category)] =
        Json{{"bytes", entry.bytes},
             {"identical_across_ranks", entry.identical_across_ranks},
             {"redundant_bytes", entry.redundant_bytes},
             {"rank_hashes", entry.rank_hashes}};
  }
  return out;
}

Json FitJson(const FitAnswer& fit) {
  return Json{{"verdict", FitVerdictName(fit.verdict)},
              {"world_size", fit.world_size},
              {"micro_batch", fit.micro_batch},
              {"peak_bytes", fit.peak_bytes},
              {"model_state_bytes", fit.model_state_bytes},
              {"peak1_bytes", fit.peak1_bytes},
              {"optimizer1_bytes", fit.optimizer1_bytes},
              {"largest_micro_batch", fit.largest_micro_batch},
              {"largest_peak_bytes", fit.largest_peak_bytes},
              {"zero_stage", fit.zero_stage},
              {"zero_peak_bytes",
               {fit.zero_peak_bytes[1], fit.zero_peak_bytes[2],
                fit.zero_peak_bytes[3]}},
              {"zero_requested_bytes", fit.zero_requested_bytes},
              {"zero3_ranks", fit.zero3_ranks},
              {"zero_stage_at_ranks", fit.zero_stage_at_ranks}};
}

Json OutOfMemoryJson(const std::optional<OutOfMemoryFigures>& oom) {
  if (!oom) return nullptr;
  return Json{{"refused_by", oom->by_system ? "system" : "limit"},
              {"limit_bytes", oom->limit_bytes},
              {"requested_bytes", oom->requested_bytes},
              {"live_bytes", oom->live_bytes},
              {"seq", oom->seq},
              {"phase", PhaseName(oom->phase)},
              {"step", oom->step},
              {"breakdown", BreakdownJson(oom->breakdown)},
              {"fit", FitJson(oom->fit)}};
}

Json FiguresJson(const CudaAllocatorFigures& f) {
  return Json{{"requested_bytes", f.requested},
              {"allocated_bytes", f.allocated},
              {"reserved_bytes", f.reserved},
              {"inactive_split_bytes", f.inactive_split}};
}

Json CudaReplayJson(const std::optional<CudaReplay>& replay) {
  if (!replay) return nullptr;
  Json out = FiguresJson(replay->at_allocated_peak);
  out["peak_reserved_bytes"] = replay->peak_reserved;
  out["segments"] = replay->segments;
  return out;
}

Json CudaRunJson(const std::optional<CudaRun>& run) {
  if (!run) return nullptr;
  Json checks = Json::array();
  for (const CudaSelfCheck& c : run->checks) {
    checks.push_back({{"step", c.step},
                      {"phase", PhaseName(c.phase)},
                      {"memprof", FiguresJson(c.memprof)},
                      {"allocator", FiguresJson(c.allocator)},
                      {"matches", c.Matches()}});
  }
  Json moments = Json::array();
  for (const CudaMoment& m : run->moments) {
    moments.push_back({{"moment", m.moment},
                       {"device_used_bytes", m.device_used},
                       {"reserved_bytes", m.reserved},
                       {"allocated_bytes", m.allocated},
                       {"outside_bytes", m.outside()}});
  }
  Json oom = nullptr;
  if (run->out_of_memory) {
    oom = {{"requested_bytes", run->oom_requested_bytes},
           {"device_free_bytes", run->oom_device_free_bytes},
           {"at", FiguresJson(run->at_out_of_memory)}};
  }
  return Json{{"device", run->device},
              {"device_name", run->device_name},
              {"device_total_bytes", run->device_total},
              {"at_allocated_peak", FiguresJson(run->at_allocated_peak)},
              {"peak_reserved_bytes", run->peak_reserved},
              {"allocator_peak_allocated_bytes", run->allocator_peak_allocated},
              {"allocator_peak_reserved_bytes", run->allocator_peak_reserved},
              {"predicted_at_peak", FiguresJson(run->predicted_at_peak)},
              {"predicted_peak_reserved_bytes", run->predicted_peak_reserved},
              {"before_session_allocated_bytes", run->before_session_allocated},
              {"checks", std::move(checks)},
              {"moments", std::move(moments)},
              {"mismatches", run->mismatches},
              {"first_mismatch", run->first_mismatch},
              {"memory_limit_bytes", run->memory_limit_bytes},
              {"out_of_memory", std::move(oom)}};
}

}  // namespace

Json ContextJson(const ReportContext& c) {
  return Json{{"rank", c.rank},
              {"world_size", c.world_size},
              {"device", c.device},
              {"backend", c.backend},
              {"libtorch_version", c.libtorch_version},
              {"cuda",
               {{"compiled", c.cuda.compiled},
                {"available", c.cuda.available},
                {"devices", c.cuda.devices},
                {"status", c.cuda.status}}},
              {"git_sha", c.git_sha},
              {"hostname", c.hostname},
              {"pid", c.pid},
              {"session_start_unix_us", c.session_start_unix_us},
              {"cpu_threads", c.cpu_threads},
              {"config", ToJson(c.config)},
              {"config_origins", c.config.origins}};
}

namespace {

// Each step's entry, its breakdowns when it was kept, in order.
template <typename Emit>
void ForEachStepJson(const RankReport& r, Emit emit) {
  auto detail = r.step_details.begin();
  for (const StepReport& s : r.steps) {
    const bool kept = detail != r.step_details.end() && detail->step == s.step;
    emit(StepJson(s, kept ? &*detail++ : nullptr));
  }
}

}  // namespace

Json ToJson(const RankReport& r) { return ToJson(r, /*with_steps=*/true); }

Json KeptStepsJson(const RankReport& r) {
  Json steps = Json::array();
  ForEachStepJson(r, [&steps](Json step) {
    if (step.contains("breakdown")) steps.push_back(std::move(step));
  });
  return steps;
}

void WriteRankReport(const RankReport& r, const std::string& path) {
  const Json doc = ToJson(r, /*with_steps=*/false);
  DocumentWriter out(path, DocumentFormat::kJson);
  out.BeginObject();
  for (const auto& [key, value] : doc.items()) {
    out.Key(key);
    if (key != "steps") {
      out.Value(value);
      continue;
    }
    out.BeginArray();
    ForEachStepJson(r, [&out](const Json& step) { out.Value(step); });
    out.EndArray();
  }
  out.EndObject();
  out.Commit();
}

Json ToJson(const RankReport& r, bool with_steps) {
  Json peak = PeakJson(r.peak, "steady_state");
  peak["first_step"] = r.steady_first_step;
  peak["steady_from"] = r.steady_from;
  peak["predicted"] =
      Json{{"total_bytes", r.predicted_peak.total_bytes},
           {"phase", PhaseName(r.predicted_peak.phase)},
           {"what", r.predicted_peak.what},
           {"breakdown", BreakdownJson(r.predicted_peak.breakdown)}};
  Json steps = Json::array();
  if (with_steps) {
    ForEachStepJson(r,
                    [&steps](Json step) { steps.push_back(std::move(step)); });
  }
  Json timeline = Json::array();
  for (const TimelineSegment& seg : r.timeline) {
    timeline.push_back(SegmentJson(seg));
  }
  return Json{
      {"schema", kRankSchema},
      {"context", ContextJson(r.context)},
      {"post_mortem", PostMortemJson(r.post_mortem)},
      {"parameters", r.parameters},
      {"predicted_parameters", r.predicted_parameters},
      {"trained_parameters", r.trained_parameters},
      {"predicted_trained_parameters", r.predicted_trained_parameters},
      {"micro_batch", r.micro_batch},
      {"categories", CategoriesJson(r)},
      {"peak", peak},
      {"run_peak", PeakJson(r.run_peak, "run")},
      {"steps", steps},
      {"ddp",
       {{"buckets", r.ddp.buckets},
        {"bucket_cap_mb", r.ddp.bucket_cap_mb},
        {"gradient_as_bucket_view", r.ddp.gradient_as_bucket_view}}},
      {"redundancy", RedundancyJson(r.redundancy)},
      {"out_of_memory", OutOfMemoryJson(r.out_of_memory)},
      {"timeline", timeline},
      {"series", SeriesJson(r.series)},
      {"hook",
       {{"installed", r.hook.installed},
        {"allocations", r.hook.allocations},
        {"allocated_bytes", r.hook.allocated_bytes},
        {"freed_bytes", r.hook.freed_bytes},
        {"ownership_not_found", r.hook.ownership_not_found},
        {"ownership_conflicts", r.hook.ownership_conflicts}}},
      {"cuda_replay", CudaReplayJson(r.cuda_replay)},
      {"cuda_run", CudaRunJson(r.cuda_run)},
      {"zero", ZeroJson(r.zero)},
      {"checkpointing", CheckpointingJson(r.checkpointing)},
      {"scopes", ScopesJson(r.scopes)},
  };
}

void RequireMemoryFigures(const RankReport& report, const std::string& origin) {
  if (!report.hook.installed) {
    throw InputError(origin +
                     ": hook.installed: false: a --no-hook run has step times "
                     "only, no memory figures; profile without --no-hook");
  }
}

std::string RankReportPath(const std::string& dir, int rank) {
  return (std::filesystem::path(dir) /
          ("rank-" + std::to_string(rank) + ".json"))
      .string();
}

}  // namespace memprof
