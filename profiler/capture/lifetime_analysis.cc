#include "profiler/capture/lifetime_analysis.h"

#include <algorithm>
#include <utility>
#include <vector>

#include <c10/util/Exception.h>

namespace memprof {
namespace {

struct Event {
  int64_t delta = 0;  // +bytes at an alloc, -bytes at a free, 0: no event
  Category category = Category::kUnattributed;
};

void Raise(PeakPoint& point, int64_t total, const Breakdown& now, int64_t seq,
           const PhaseMark& mark) {
  if (total <= point.total_bytes && point.seq >= 0) return;
  point.total_bytes = total;
  point.seq = seq;
  point.phase = mark.phase;
  point.step = mark.step;
  point.bytes = now;
}

// Keeps the first and last points and, of each run of `stride` points in
// between, the lowest and the highest total, in seq order.
std::vector<SeriesPoint> Thin(std::vector<SeriesPoint> points) {
  if (points.size() <= kMaxSeriesPoints) return points;
  const size_t inner = points.size() - 2;
  const size_t runs = (kMaxSeriesPoints - 2) / 2;
  const size_t stride = (inner + runs - 1) / runs;
  std::vector<SeriesPoint> kept = {points.front()};
  for (size_t begin = 1; begin <= inner; begin += stride) {
    const size_t end = std::min(begin + stride, inner + 1);
    size_t low = begin, high = begin;
    for (size_t i = begin; i < end; ++i) {
      if (Sum(points[i].bytes) < Sum(points[low].bytes)) low = i;
      if (Sum(points[i].bytes) > Sum(points[high].bytes)) high = i;
    }
    kept.push_back(points[std::min(low, high)]);
    if (low != high) kept.push_back(points[std::max(low, high)]);
  }
  kept.push_back(points.back());
  return kept;
}

// The capture's events indexed by seq - begin_seq (one event per seq at
// most); adds each category's allocated and freed bytes and the number of
// allocations to `out`.
std::vector<Event> EventsOf(const Capture& capture, Analysis& out) {
  const int64_t begin = capture.begin_seq;
  std::vector<Event> events(
      static_cast<size_t>(std::max<int64_t>(capture.end_seq - begin, 0)));
  for (const Lifetime& life : capture.lifetimes) {
    TORCH_INTERNAL_ASSERT(life.alloc_seq >= begin &&
                          life.alloc_seq < capture.end_seq);
    const int c = Index(life.category);
    TORCH_INTERNAL_ASSERT(c < kNumCategories, "unresolved block in capture");
    events[life.alloc_seq - begin] = Event{life.bytes, life.category};
    out.stats[c].allocated += life.bytes;
    if (life.free_seq != kLive) {
      TORCH_INTERNAL_ASSERT(life.free_seq > life.alloc_seq &&
                            life.free_seq < capture.end_seq);
      events[life.free_seq - begin] = Event{-life.bytes, life.category};
      out.stats[c].freed += life.bytes;
    }
    ++out.allocations;
  }
  return events;
}

// One StepFigures per step the marks name, and the steady state's first
// step: `steady_from`, clamped to [1, last step].
void AddSteps(const Capture& capture, int32_t steady_from, Analysis& out) {
  int32_t last_step = 0;
  for (const PhaseMark& mark : capture.marks) {
    last_step = std::max(last_step, mark.step);
  }
  out.steady_first_step = std::max(1, std::min(steady_from, last_step));
  for (int32_t s = 1; s <= last_step; ++s) {
    StepFigures figures;
    figures.step = s;
    out.steps.push_back(figures);
  }
}

// Replays the events in seq order: the live bytes by category, one segment
// per phase mark, and every peak and maximum of `out`.
class Replay {
 public:
  Replay(const Capture& capture, Analysis& out)
      : capture_(capture), out_(out) {}

  void Run(const std::vector<Event>& events) {
    OpenSegment();
    for (int64_t seq = capture_.begin_seq; seq < capture_.end_seq; ++seq) {
      while (mark_index_ + 1 < capture_.marks.size() &&
             capture_.marks[mark_index_ + 1].seq <= seq) {
        CloseSegment();
        ++mark_index_;
        OpenSegment();
      }
      Apply(seq, events[seq - capture_.begin_seq]);
    }
    // Close the remaining segments (marks after the last event included).
    CloseSegment();
    while (mark_index_ + 1 < capture_.marks.size()) {
      ++mark_index_;
      OpenSegment();
      CloseSegment();
    }
  }

 private:
  // The segment of mark `mark_index_`, from the live bytes now.
  void OpenSegment() {
    const PhaseMark& mark = capture_.marks[mark_index_];
    const bool last = mark_index_ + 1 == capture_.marks.size();
    Segment segment;
    segment.step = mark.step;
    segment.phase = mark.phase;
    segment.begin_seq = mark.seq;
    segment.end_seq =
        last ? capture_.end_seq : capture_.marks[mark_index_ + 1].seq;
    segment.begin_ns = mark.time_ns;
    segment.end_ns =
        last ? capture_.end_ns : capture_.marks[mark_index_ + 1].time_ns;
    segment.begin_bytes = now_;
    out_.segments.push_back(segment);
    // Blocks live when a step opens count toward its own maxima.
    if (mark.step >= 1) {
      for (int c = 0; c < kNumCategories; ++c) {
        Breakdown& step_max = out_.steps[mark.step - 1].max_bytes;
        step_max[c] = std::max(step_max[c], now_[c]);
        if (mark.step >= out_.steady_first_step) {
          out_.steady_max[c] = std::max(out_.steady_max[c], now_[c]);
        }
      }
    }
  }

  void CloseSegment() {
    out_.segments.back().end_bytes = now_;
    const int32_t step = capture_.marks[mark_index_].step;
    if (step >= 1) out_.steps[step - 1].end_bytes = now_;
  }

  void Apply(int64_t seq, const Event& event) {
    if (event.delta == 0) return;
    const int c = Index(event.category);
    now_[c] += event.delta;
    total_ += event.delta;
    if (event.delta < 0) return;
    const PhaseMark& mark = capture_.marks[mark_index_];
    Stat& stat = out_.stats[c];
    stat.peak = std::max(stat.peak, now_[c]);
    Raise(out_.run_peak, total_, now_, seq, mark);
    Raise(out_.segments.back().peak, total_, now_, seq, mark);
    if (mark.step >= 1) {
      StepFigures& step = out_.steps[mark.step - 1];
      Raise(step.peak, total_, now_, seq, mark);
      step.max_bytes[c] = std::max(step.max_bytes[c], now_[c]);
      if (mark.step >= out_.steady_first_step) {
        Raise(out_.steady_peak, total_, now_, seq, mark);
        out_.steady_max[c] = std::max(out_.steady_max[c], now_[c]);
      }
    }
  }

  const Capture& capture_;
  Analysis& out_;
  Breakdown now_{};
  int64_t total_ = 0;
  size_t mark_index_ = 0;  // the mark in force
};

// The series: the live bytes after each event of the steady-state peak's
// step (out.steady_peak.seq >= 0), thinned.
void AddSeries(const std::vector<Event>& events, int64_t begin, Analysis& out) {
  out.series_step = out.steady_peak.step;
  const Segment* first = nullptr;
  int64_t end_seq = 0;
  for (const Segment& segment : out.segments) {
    if (segment.step != out.series_step) continue;
    if (first == nullptr) first = &segment;
    end_seq = segment.end_seq;
  }
  Breakdown live = first->begin_bytes;
  // Right after the event before the step opened: the opening value.
  std::vector<SeriesPoint> points = {SeriesPoint{first->begin_seq - 1, live}};
  for (int64_t seq = first->begin_seq; seq < end_seq; ++seq) {
    const Event& event = events[seq - begin];
    if (event.delta == 0) continue;
    live[Index(event.category)] += event.delta;
    points.push_back(SeriesPoint{seq, live});
  }
  out.series = Thin(std::move(points));
}

// Each category's current bytes, and the totals over categories.
void AddTotals(Analysis& out) {
  for (Stat& stat : out.stats) {
    stat.current = stat.allocated - stat.freed;
    out.total.allocated += stat.allocated;
    out.total.freed += stat.freed;
  }
  out.total.current = out.total.allocated - out.total.freed;
  out.total.peak = out.run_peak.total_bytes;
}

}  // namespace

Analysis Analyze(const Capture& capture, int32_t steady_from) {
  Analysis out;
  TORCH_INTERNAL_ASSERT(!capture.marks.empty(), "capture without marks");
  const std::vector<Event> events = EventsOf(capture, out);
  AddSteps(capture, steady_from, out);
  Replay(capture, out).Run(events);
  if (out.steady_peak.seq >= 0) AddSeries(events, capture.begin_seq, out);
  AddTotals(out);
  return out;
}

Breakdown LiveAt(const Capture& capture, int64_t seq) {
  Breakdown live{};
  for (const Lifetime& life : capture.lifetimes) {
    if (life.alloc_seq < seq && life.free_seq >= seq) {
      live[Index(life.category)] += life.bytes;
    }
  }
  return live;
}

}  // namespace memprof
