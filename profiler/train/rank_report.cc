#include "profiler/train/rank_report.h"

#include <unistd.h>

#include <cstdio>

#include <torch/version.h>

#include "profiler/report/breakdown_json.h"
#include "profiler/predict/fit.h"
#include "profiler/base/human_bytes.h"

#ifndef MEMPROF_GIT_SHA
#define MEMPROF_GIT_SHA "unknown"
#endif

namespace memprof {
namespace {

using Json = nlohmann::ordered_json;

Json PeakJson(const PeakPoint& peak) {
  return Json{{"total_bytes", peak.total_bytes},
              {"phase", PhaseName(peak.phase)},
              {"step", peak.step},
              {"seq", peak.seq},
              {"breakdown", BreakdownJson(peak.bytes)}};
}

std::string Hex(uint64_t value) {
  char text[20];
  std::snprintf(text, sizeof text, "%016llx",
                static_cast<unsigned long long>(value));
  return text;
}

std::string Hostname() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

}  // namespace

nlohmann::ordered_json ToJson(const RankReport& r) {
  const Analysis& a = r.analysis;
  Json categories = Json::object();
  for (Category c : kAllCategories) {
    const int i = Index(c);
    Json entry{{"measured_bytes", a.steady_peak.bytes[i]},
               {"peak_bytes", a.steady_max[i]},
               {"predicted_bytes", r.prediction.bytes[i]},
               {"end_bytes", a.stats[i].current},
               {"allocated_bytes", a.stats[i].allocated},
               {"freed_bytes", a.stats[i].freed}};
    if (c == Category::kWeights) entry["buffers_bytes"] = r.buffer_bytes;
    categories[CategoryName(c)] = entry;
  }
  Json peak = PeakJson(a.steady_peak);
  peak["scope"] = "steady_state";
  peak["first_step"] = a.steady_first_step;
  const PredictedMoment& predicted = r.prediction.Peak();
  peak["predicted"] = Json{{"total_bytes", predicted.Total()},
                           {"phase", PhaseName(predicted.phase)},
                           {"what", predicted.what},
                           {"breakdown", BreakdownJson(predicted.bytes)}};
  Json run_peak = PeakJson(a.run_peak);
  run_peak["scope"] = "run";

  Json steps = Json::array();
  for (const StepFigures& s : a.steps) {
    const StepRecord& record = r.step_records.at(s.step - 1);
    steps.push_back(Json{{"step", s.step},
                         {"steady_state", s.step >= a.steady_first_step},
                         {"completed", record.completed},
                         {"seconds", record.seconds},
                         {"comm_seconds", record.comm_seconds},
                         {"loss", record.loss},
                         {"peak_bytes", s.peak.total_bytes},
                         {"peak_phase", PhaseName(s.peak.phase)},
                         {"peak_seq", s.peak.seq},
                         {"breakdown", BreakdownJson(s.peak.bytes)},
                         {"max_bytes", BreakdownJson(s.max_bytes)},
                         {"end_bytes", BreakdownJson(s.end_bytes)}});
  }
  Json timeline = Json::array();
  for (const Segment& seg : a.segments) {
    timeline.push_back(Json{{"step", seg.step},
                            {"phase", PhaseName(seg.phase)},
                            {"begin_seq", seg.begin_seq},
                            {"end_seq", seg.end_seq},
                            {"begin_us", seg.begin_ns / 1000},
                            {"end_us", seg.end_ns / 1000},
                            {"begin_bytes", BreakdownJson(seg.begin_bytes)},
                            {"peak_bytes", seg.peak.total_bytes},
                            {"peak_seq", seg.peak.seq},
                            {"peak_breakdown", BreakdownJson(seg.peak.bytes)},
                            {"end_bytes", BreakdownJson(seg.end_bytes)}});
  }
  Json series_seq = Json::array();
  Json series_bytes = Json::object();
  for (Category c : kAllCategories) {
    series_bytes[CategoryName(c)] = Json::array();
  }
  for (const SeriesPoint& point : a.series) {
    series_seq.push_back(point.seq);
    for (Category c : kAllCategories) {
      series_bytes[CategoryName(c)].push_back(point.bytes[Index(c)]);
    }
  }
  Json redundancy = Json::object();
  for (const Redundancy& entry : r.redundancy) {
    Json hashes = Json::array();
    for (uint64_t h : entry.rank_hashes) hashes.push_back(Hex(h));
    redundancy[CategoryName(entry.category)] =
        Json{{"bytes", entry.bytes},
             {"identical_across_ranks", entry.identical_across_ranks},
             {"redundant_bytes", entry.redundant_bytes},
             {"rank_hashes", hashes}};
  }
  Json out_of_memory = nullptr;
  if (r.RanOutOfMemory()) {
    const OutOfMemory& oom = r.capture.out_of_memory;
    const FitAnswer fit = Fit(r.config, oom.limit_bytes);
    out_of_memory =
        Json{{"limit_bytes", oom.limit_bytes},
             {"requested_bytes", oom.requested_bytes},
             {"live_bytes", oom.live_bytes},
             {"seq", oom.seq},
             {"phase", PhaseName(oom.phase)},
             {"step", oom.step},
             {"breakdown", BreakdownJson(r.out_of_memory_bytes)},
             {"verdict", FitVerdictName(fit.verdict)},
             {"explanation", FitVerdictSentence(fit)},
             {"message",
              "out of memory in " + std::string(PhaseName(oom.phase)) +
                  (oom.step > 0 ? " of step " + std::to_string(oom.step) : "") +
                  ": tried to allocate " + HumanBytes(oom.requested_bytes) +
                  " with " + HumanBytes(oom.live_bytes) + " (" +
                  std::to_string(oom.live_bytes) + " B) live of the " +
                  HumanBytes(oom.limit_bytes) + " (" +
                  std::to_string(oom.limit_bytes) + " B) --memory-limit"}};
  }
  return Json{
      {"schema", kRankSchema},
      {"context",
       {{"rank", r.context.rank},
        {"world_size", r.context.world_size},
        {"device", r.context.device},
        {"backend", r.context.backend},
        {"libtorch_version", TORCH_VERSION},
        {"git_sha", MEMPROF_GIT_SHA},
        {"hostname", Hostname()},
        {"pid", static_cast<int64_t>(::getpid())},
        {"session_start_unix_us", r.capture.begin_unix_us},
        {"config", ToJson(r.config)}}},
      {"parameters", r.parameters},
      {"predicted_parameters", r.prediction.parameters},
      {"micro_batch", r.micro_batch},
      {"categories", categories},
      {"peak", peak},
      {"run_peak", run_peak},
      {"steps", steps},
      {"ddp",
       {{"buckets", r.buckets},
        {"bucket_cap_mb", r.config.ddp.bucket_cap_mb},
        {"gradient_as_bucket_view", r.config.ddp.gradient_as_bucket_view}}},
      {"redundancy", redundancy},
      {"out_of_memory", out_of_memory},
      {"timeline", timeline},
      {"series",
       {{"step", a.series_step}, {"seq", series_seq}, {"bytes", series_bytes}}},
      {"hook",
       {{"installed", r.hooked},
        {"allocations", a.allocations},
        {"allocated_bytes", a.total.allocated},
        {"freed_bytes", a.total.freed},
        {"ownership_not_found", r.ownership_not_found},
        {"ownership_conflicts", r.ownership_conflicts}}},
  };
}

}  // namespace memprof
