#include "profiler/report/chrome_trace.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>

#include "profiler/base/category.h"

namespace memprof {
namespace {

using Json = nlohmann::ordered_json;

constexpr int kLoopThread = 0;  // tid of the phase and step spans

// Note [Trace processes]
// Rank r is process r + 1: Perfetto and other viewers treat pid 0 as the
// kernel's (the swapper), not as a process of the trace. A span of zero
// duration (the idle mark at a session's very start or end) is left out:
// it nests ambiguously with the spans that begin or end at its time in
// viewers that sort by start, and carries no time. Counter tracks are
// written for the categories the run's dtype can hold.
int PidOf(int rank) { return rank + 1; }

Json Metadata(const char* name, int pid, const Json& args, int tid = 0) {
  return Json{
      {"name", name}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", args}};
}

Json Span(const std::string& name, const char* category, int pid, double ts,
          double dur, const Json& args) {
  return Json{{"name", name}, {"cat", category},    {"ph", "X"},
              {"pid", pid},   {"tid", kLoopThread}, {"ts", ts},
              {"dur", dur},   {"args", args}};
}

// One counter event per category (one track each), plus the total.
void Counters(Json& events, int pid, double ts, const Breakdown& breakdown,
              const std::string& dtype) {
  for (Category c : CategoriesOf(dtype)) {
    events.push_back(Json{{"name", CategoryName(c)},
                          {"cat", "memory"},
                          {"ph", "C"},
                          {"pid", pid},
                          {"ts", ts},
                          {"args", {{"bytes", breakdown[Index(c)]}}}});
  }
  events.push_back(Json{{"name", "total"},
                        {"cat", "memory"},
                        {"ph", "C"},
                        {"pid", pid},
                        {"ts", ts},
                        {"args", {{"bytes", Sum(breakdown)}}}});
}

// Where the segment's peak event falls in time: its seq placed linearly
// between the segment's first and last event (the hook records an order,
// not a time, per event; the marks have times).
double PeakTime(const TimelineSegment& segment, double begin, double end) {
  const double first = static_cast<double>(segment.begin_seq);
  const double last = static_cast<double>(segment.end_seq);
  const double at = static_cast<double>(segment.peak_seq);
  if (last <= first) return begin;
  return begin +
         (end - begin) * std::clamp((at - first) / (last - first), 0.0, 1.0);
}

void ProcessMetadata(Json& events, const ReportContext& context) {
  const int pid = PidOf(context.rank);
  events.push_back(Metadata("process_name", pid,
                            {{"name", "rank " + std::to_string(context.rank) +
                                          " (" + context.hostname + ", pid " +
                                          std::to_string(context.pid) + ")"}}));
  events.push_back(Metadata("process_sort_index", pid, {{"sort_index", pid}}));
  events.push_back(
      Metadata("thread_name", pid, {{"name", "training loop"}}, kLoopThread));
}

// A run on a GPU: the caching allocator's figures at each phase mark (its
// self-check), one counter track with three series, placed at the mark's
// time (the checks follow the marks in order).
void GpuCounters(Json& events, const RankReport& rank,
                 const std::function<double(int64_t)>& at) {
  if (!rank.cuda_run) return;
  const std::vector<TimelineSegment>& timeline = rank.timeline;
  size_t j = 0;
  for (const CudaSelfCheck& check : rank.cuda_run->checks) {
    while (j < timeline.size() && (timeline[j].step != check.step ||
                                   timeline[j].phase != check.phase)) {
      ++j;
    }
    if (j == timeline.size()) return;
    const CudaAllocatorFigures& f = check.memprof;
    events.push_back(Json{
        {"name", "gpu allocator"},
        {"cat", "gpu"},
        {"ph", "C"},
        {"pid", PidOf(rank.context.rank)},
        {"ts", at(timeline[j].begin_us)},
        {"args",
         {{"allocated", f.allocated},
          {"inactive_split", f.inactive_split},
          {"reserved_free", f.reserved - f.allocated - f.inactive_split}}}});
    ++j;
  }
}

void RankEvents(Json& events, const RankReport& rank, int64_t offset_us) {
  const int pid = PidOf(rank.context.rank);
  const std::string& dtype = rank.context.config.train.dtype;
  ProcessMetadata(events, rank.context);
  const std::vector<TimelineSegment>& timeline = rank.timeline;
  auto at = [&](int64_t us) { return static_cast<double>(offset_us + us); };
  // Steps first, so that each step's span encloses its phases.
  for (size_t i = 0; i < timeline.size();) {
    const int step = timeline[i].step;
    size_t j = i;
    while (j + 1 < timeline.size() && timeline[j + 1].step == step) ++j;
    if (step > 0 && timeline[j].end_us > timeline[i].begin_us) {
      const double begin = at(timeline[i].begin_us);
      events.push_back(Span("step " + std::to_string(step), "step", pid, begin,
                            at(timeline[j].end_us) - begin, {{"step", step}}));
    }
    i = j + 1;
  }
  for (const TimelineSegment& segment : timeline) {
    if (segment.end_us <= segment.begin_us) continue;  // Note [Trace processes]
    const double begin = at(segment.begin_us);
    events.push_back(Span(std::string(PhaseName(segment.phase)), "phase", pid,
                          begin, at(segment.end_us) - begin,
                          {{"step", segment.step},
                           {"micro_batch", segment.micro_batch},
                           {"begin_seq", segment.begin_seq},
                           {"end_seq", segment.end_seq},
                           {"peak_bytes", segment.peak_bytes}}));
  }
  for (size_t i = 0; i < timeline.size(); ++i) {
    const TimelineSegment& segment = timeline[i];
    const double begin = at(segment.begin_us);
    const double end = at(segment.end_us);
    Counters(events, pid, begin, segment.begin_bytes, dtype);
    if (segment.peak_seq >= 0) {
      Counters(events, pid, PeakTime(segment, begin, end),
               segment.peak_breakdown, dtype);
    }
    if (i + 1 == timeline.size()) {
      Counters(events, pid, end, segment.end_bytes, dtype);
    }
  }
  GpuCounters(events, rank, at);
}

}  // namespace

Json ChromeTraceJson(const RunView& view) {
  int64_t first_start = std::numeric_limits<int64_t>::max();
  for (const RankReport& rank : view.ranks) {
    first_start = std::min(first_start, rank.context.session_start_unix_us);
  }
  Json events = Json::array();
  for (const RankReport& rank : view.ranks) {
    RankEvents(events, rank, rank.context.session_start_unix_us - first_start);
  }
  return Json{
      {"traceEvents", events},
      {"displayTimeUnit", "ms"},
      {"otherData",
       {{"producer", "memprof"},
        {"ranks", view.world_size},
        {"complete", view.complete()},
        {"session_start_unix_us", view.ranks.empty() ? 0 : first_start}}}};
}

}  // namespace memprof
