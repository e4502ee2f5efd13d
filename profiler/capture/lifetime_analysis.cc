#include "profiler/capture/lifetime_analysis.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <vector>

#include "profiler/base/errors.h"

namespace memprof {
namespace {

// A block's flags as reports know them (kFlagBuffer...), without the
// tracker's kTagOwned.
uint8_t BlockFlags(uint64_t tag) {
  return static_cast<uint8_t>(FlagsOfTag(tag) & ~kTagOwned);
}
uint64_t Retagged(uint64_t tag, Category c) {
  return Tag(BytesOfTag(tag), c, FlagsOfTag(tag));
}
PhaseMark MarkOf(const Record& r) {
  return PhaseMark{r.seq, PhaseOfMarkWord(r.a), StepOfMarkWord(r.a),
                   static_cast<int64_t>(r.b)};
}

// Note [Streaming analysis]: one byte per alloc record, category + 1 at
// the block's alloc ordinal (its place among the capture's alloc records,
// so the file is bounded by the records read, whatever their seqs say), in
// an unnamed temporary file; written in any order, read in order.
class CategoryColumn {
 public:
  CategoryColumn() : buffer_(kWindow, 0) {
    fd_ = OpenTemporaryFile();
    if (fd_ < 0) {
      throw std::runtime_error(
          std::string("cannot create a temporary file in $TMPDIR or /tmp: ") +
          std::strerror(errno));
    }
  }
  ~CategoryColumn() { ::close(fd_); }
  CategoryColumn(const CategoryColumn&) = delete;
  CategoryColumn& operator=(const CategoryColumn&) = delete;

  void Set(int64_t ordinal, Category c) {
    while (ordinal >= base_ + kWindow) Slide();
    const uint8_t value = static_cast<uint8_t>(static_cast<int>(c) + 1);
    if (ordinal >= base_) {
      buffer_[ordinal - base_] = value;
    } else {
      Write(&value, 1, ordinal);
    }
  }
  // Writes what the window holds (up to `ordinals`, the allocs counted)
  // and turns to reading from the first.
  void Finish(int64_t ordinals) {
    Write(buffer_.data(), std::min(kWindow, ordinals - base_), base_);
    base_ = 0;
    size_ = 0;
  }
  // The category of the block of alloc `ordinal` (non-decreasing), or
  // nullopt.
  std::optional<Category> Get(int64_t ordinal) {
    if (ordinal < base_ || ordinal >= base_ + size_) {
      base_ = ordinal;
      const ssize_t n = ::pread(fd_, buffer_.data(), kWindow, ordinal);
      size_ = n > 0 ? n : 0;
      if (ordinal >= base_ + size_) return std::nullopt;
    }
    const uint8_t value = buffer_[ordinal - base_];
    if (value == 0) return std::nullopt;
    return static_cast<Category>(value - 1);
  }

 private:
  static constexpr int64_t kWindow = int64_t{1} << 20;
  void Slide() {
    constexpr int64_t half = kWindow / 2;
    Write(buffer_.data(), half, base_);
    std::memmove(buffer_.data(), buffer_.data() + half, half);
    std::memset(buffer_.data() + half, 0, half);
    base_ += half;
  }
  void Write(const uint8_t* data, int64_t bytes, int64_t ordinal) {
    int64_t done = 0;
    while (done < bytes) {
      const ssize_t n =
          ::pwrite(fd_, data + done, bytes - done, ordinal + done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        throw std::runtime_error(std::string("cannot write the analysis' "
                                             "temporary file: ") +
                                 std::strerror(errno));
      }
      done += n;
    }
  }

  int fd_ = -1;
  int64_t base_ = 0;
  int64_t size_ = 0;  // reading: bytes of the window read
  std::vector<uint8_t> buffer_;
};

[[noreturn]] void Contradiction(const CaptureReader& reader,
                                const std::string& name, const Record& r,
                                const char* what) {
  throw InputError(name + ": record " + std::to_string(reader.records()) +
                   " (seq " + std::to_string(r.seq) + ") " + what +
                   "; the capture is damaged");
}

// What pass 1 learns about the whole session.
struct Outline {
  int64_t end_seq = 0;
  int64_t end_ns = 0;
  bool ended = false;
  int32_t last_step = 0;
  int32_t last_bucket_free_step = 0;
  PhaseMark last_mark;
  OutOfMemory out_of_memory;
  std::vector<StepPeak> step_peaks;  // category-free totals, steps 1..K
  bool torn = false;
  bool cut_short = false;
  int64_t records = 0;
};

Outline FirstPass(CaptureReader& reader, const std::string& name,
                  CategoryColumn& column) {
  Outline out;
  struct Block {
    int64_t alloc_seq;
    int64_t ordinal;  // among the alloc records (CategoryColumn)
    uint64_t tag;
  };
  int64_t allocs = 0;
  std::unordered_map<uint64_t, Block> live;  // by address
  int64_t total = 0;
  int64_t last_seq = reader.header().begin_seq - 1;
  PhaseMark mark{reader.header().begin_seq, Phase::kIdle, 0, 0};
  PhaseMark forward_mark;
  Record r;
  RecordKind kind;
  while (reader.Next(r, kind)) {
    switch (kind) {
      case RecordKind::kAlloc: {
        if (!live.emplace(r.a, Block{r.seq, allocs++, r.b}).second) {
          Contradiction(reader, name, r, "allocates a live block");
        }
        total += BytesOfTag(r.b);
        if (mark.step >= 1) {
          StepPeak& peak = out.step_peaks[mark.step - 1];
          if (total > peak.total_bytes || peak.seq < 0) {
            // The peak's fields only: begin_ns and end_ns time the step.
            peak.total_bytes = total;
            peak.seq = r.seq;
            peak.phase = mark.phase;
          }
        }
        last_seq = r.seq;
        break;
      }
      case RecordKind::kFree: {
        const auto it = live.find(r.a);
        if (it == live.end()) {
          Contradiction(reader, name, r, "frees a block not live");
        }
        Category c = CategoryOfTag(r.b);
        if (c == Category::kPending) c = Category::kTemporaries;
        column.Set(it->second.ordinal, c);
        if (BlockFlags(r.b) & kFlagBucket) {
          out.last_bucket_free_step = mark.step;
        }
        total -= BytesOfTag(it->second.tag);
        live.erase(it);
        last_seq = r.seq;
        break;
      }
      case RecordKind::kResolve: {
        const auto it = live.find(r.a);
        if (it != live.end()) it->second.tag = r.b;
        break;
      }
      case RecordKind::kPending:
        for (auto& [address, block] : live) {
          if (CategoryOfTag(block.tag) == Category::kPending &&
              block.alloc_seq >= static_cast<int64_t>(r.a)) {
            block.tag = Retagged(block.tag, static_cast<Category>(r.b));
          }
        }
        break;
      case RecordKind::kMark:
        mark = MarkOf(r);
        // Every step's peak is kept: a step beyond the file's record count
        // is a damaged record, not a step to make room for.
        if (mark.step < 0 ||
            mark.step >
                reader.file_bytes() / static_cast<int64_t>(sizeof(Record))) {
          Contradiction(reader, name, r, "marks a step beyond its records");
        }
        if (mark.phase == Phase::kForward) forward_mark = mark;
        if (out.last_step >= 1 && mark.step != out.last_step) {
          out.step_peaks[out.last_step - 1].end_ns =
              std::max(out.step_peaks[out.last_step - 1].end_ns, mark.time_ns);
        }
        if (mark.step > out.last_step) {
          out.last_step = mark.step;
          out.step_peaks.resize(static_cast<size_t>(mark.step));
          out.step_peaks.back().begin_ns = mark.time_ns;
        }
        break;
      case RecordKind::kRefusal:
        if (out.out_of_memory.seq < 0) {
          out.out_of_memory = OutOfMemory{
              r.seq,           static_cast<int64_t>(r.a & ~(uint64_t{1} << 63)),
              total,           static_cast<int64_t>(r.b),
              mark.phase,      mark.step,
              (r.a >> 63) != 0};
        }
        last_seq = r.seq;
        break;
      case RecordKind::kEnd:
        out.ended = true;
        out.end_seq = r.seq;
        out.end_ns = static_cast<int64_t>(r.b);
        break;
      case RecordKind::kScopeName:
      case RecordKind::kScopeEnter:
      case RecordKind::kScopeExit:
        break;  // the second pass's (Note [Named scopes])
    }
  }
  out.torn = reader.torn();
  out.cut_short = reader.cut_short();
  out.records = reader.records();
  out.last_mark = mark;
  if (!out.ended) {  // Note [Killed capture]
    out.end_seq = std::max(last_seq + 1, mark.seq);
    out.end_ns = mark.time_ns;
  }
  if (out.last_step >= 1 && out.step_peaks.back().end_ns == 0) {
    out.step_peaks.back().end_ns = out.end_ns;
  }
  for (const auto& [address, block] : live) {
    Category c = CategoryOfTag(block.tag);
    if (c == Category::kPending) {
      c = !out.ended && mark.phase == Phase::kForward &&
                  block.alloc_seq >= forward_mark.seq
              ? Category::kActivations
              : Category::kUnattributed;
    }
    column.Set(block.ordinal, c);
  }
  column.Finish(allocs);
  return out;
}

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

// Pass 2: replays the records with final categories, in seq order.
class SecondPass {
 public:
  SecondPass(const Outline& outline, const AnalysisOptions& options,
             const std::vector<CaptureSink*>& sinks, Analysis& out)
      : outline_(outline), keep_(options.keep), sinks_(sinks), out_(out) {}

  void Run(CaptureReader& reader, const std::string& name,
           CategoryColumn& column) {
    reader.Rewind();
    mark_ = PhaseMark{reader.header().begin_seq, Phase::kIdle, 0, 0};
    bool opened = false;
    int64_t allocs = 0;
    Record r;
    RecordKind kind;
    while (reader.Next(r, kind)) {
      if (kind == RecordKind::kScopeName) {
        if (!AddScopeNameRecord(r, scope_names_)) {
          Contradiction(reader, name, r, "names a scope out of turn");
        }
        continue;
      }
      if (kind == RecordKind::kScopeEnter) {
        if (r.a >= scope_names_.size()) {
          Contradiction(reader, name, r, "opens a scope never named");
        }
        EnterScope(static_cast<uint32_t>(r.a));
        for (CaptureSink* sink : sinks_) sink->OnScopeEnter(scope_names_[r.a]);
        continue;
      }
      if (kind == RecordKind::kScopeExit) {
        if (scope_stack_.empty()) {
          Contradiction(reader, name, r, "closes a scope none opened");
        }
        ExitScope();
        for (CaptureSink* sink : sinks_) sink->OnScopeExit();
        continue;
      }
      if (kind == RecordKind::kMark) {
        if (opened) CloseSegment(r.seq, MarkOf(r).time_ns);
        mark_ = MarkOf(r);
        if (mark_.phase == Phase::kBackward && !scopes_counted_ &&
            mark_.step == out_.series_step && mark_.step >= 1) {
          CountScopeActivations();
          scopes_counted_ = true;
        }
        OpenSegment();
        opened = true;
        for (CaptureSink* sink : sinks_) sink->OnMark(mark_, Kept(mark_.step));
        continue;
      }
      if (kind == RecordKind::kAlloc) {
        const std::optional<Category> c = column.Get(allocs++);
        if (!c) Contradiction(reader, name, r, "has no final category");
        Lifetime block;
        block.alloc_seq = r.seq;
        block.bytes = BytesOfTag(r.b);
        block.category = *c;
        block.address = r.a;
        live_[r.a] = block;
        Allocated(block);
      } else if (kind == RecordKind::kFree) {
        const auto it = live_.find(r.a);
        if (it == live_.end()) {
          Contradiction(reader, name, r, "frees a block not live");
        }
        Lifetime block = it->second;
        live_.erase(it);
        block.free_seq = r.seq;
        block.flags = BlockFlags(r.b);
        Freed(block);
      } else if (kind == RecordKind::kResolve) {
        const auto it = live_.find(r.a);
        if (it != live_.end()) it->second.flags = BlockFlags(r.b);
      } else if (kind == RecordKind::kRefusal &&
                 r.seq == outline_.out_of_memory.seq) {
        out_.out_of_memory_bytes = now_;
      }
    }
    if (opened) CloseSegment(outline_.end_seq, outline_.end_ns);
    for (const auto& [address, block] : live_) {
      if (block.flags & kFlagBuffer) out_.buffer_bytes += block.bytes;
    }
    for (CaptureSink* sink : sinks_) sink->OnEnd(live_);
    out_.series = Thin(std::move(series_));
  }

 private:
  bool Steady(int32_t step) const {
    return step >= out_.steady_first_step && step <= out_.steady_last_step;
  }

  bool Kept(int32_t step) const {
    return keep_.Keeps(step, outline_.last_step) || step == out_.series_step;
  }

  void OpenSegment() {
    if (mark_.step >= 1) {
      if (mark_.step != step_) {
        step_ = mark_.step;
        if (Kept(step_)) {
          StepFigures figures;
          figures.step = step_;
          out_.steps.push_back(figures);
        }
        if (step_ == out_.series_step) {
          series_.push_back(SeriesPoint{mark_.seq - 1, now_});
        }
      }
      // Blocks live when a step opens count toward its own maxima.
      for (int c = 0; c < kNumCategories; ++c) {
        if (Kept(mark_.step)) {
          Breakdown& step_max = out_.steps.back().max_bytes;
          step_max[c] = std::max(step_max[c], now_[c]);
        }
        if (Steady(mark_.step)) {
          out_.steady_max[c] = std::max(out_.steady_max[c], now_[c]);
        }
      }
    }
    segment_ = Segment{};
    segment_.step = mark_.step;
    segment_.phase = mark_.phase;
    segment_.micro_batch = MicroBatchOfMark();
    segment_.begin_seq = mark_.seq;
    segment_.begin_ns = mark_.time_ns;
    segment_.begin_bytes = now_;
  }

  // Note [Micro-batch index]
  // The capture's marks carry the phase and the step only. Under gradient
  // accumulation a step holds several micro-batches, each inputs (when
  // marked), forward and backward, before the step's one optimizer and
  // zero_grad: an inputs or forward mark after a backward of the same step
  // begins the next micro-batch. So the index follows from the marks' order
  // alone, and captures written before accumulation read the same (one
  // micro-batch per step).
  int32_t MicroBatchOfMark() {
    if (mark_.step < 1) return 0;
    if (mark_.step != micro_step_) {
      micro_step_ = mark_.step;
      micro_batch_ = 1;
      backward_seen_ = false;
    }
    switch (mark_.phase) {
      case Phase::kInputs:
      case Phase::kForward:
        if (backward_seen_) {
          ++micro_batch_;
          backward_seen_ = false;
        }
        return micro_batch_;
      case Phase::kBackward:
        backward_seen_ = true;
        return micro_batch_;
      default:
        return 0;
    }
  }

  void CloseSegment(int64_t end_seq, int64_t end_ns) {
    segment_.end_seq = end_seq;
    segment_.end_ns = end_ns;
    segment_.end_bytes = now_;
    if (Kept(segment_.step)) {
      out_.segments.push_back(segment_);
      if (segment_.step >= 1) out_.steps.back().end_bytes = now_;
    }
  }

  void Allocated(const Lifetime& block) {
    const int c = Index(block.category);
    now_[c] += block.bytes;
    total_ += block.bytes;
    ++out_.allocations;
    Stat& stat = out_.stats[c];
    stat.allocated += block.bytes;
    stat.peak = std::max(stat.peak, now_[c]);
    Raise(out_.run_peak, total_, now_, block.alloc_seq, mark_);
    Raise(segment_.peak, total_, now_, block.alloc_seq, mark_);
    if (mark_.step >= 1) {
      if (Kept(mark_.step)) {
        StepFigures& step = out_.steps.back();
        Raise(step.peak, total_, now_, block.alloc_seq, mark_);
        step.max_bytes[c] = std::max(step.max_bytes[c], now_[c]);
      }
      if (Steady(mark_.step)) {
        Raise(out_.steady_peak, total_, now_, block.alloc_seq, mark_);
        out_.steady_max[c] = std::max(out_.steady_max[c], now_[c]);
      }
    }
    if (mark_.step == out_.series_step && mark_.step >= 1) {
      series_.push_back(SeriesPoint{block.alloc_seq, now_});
      ScopedAlloc(block);
    }
    for (CaptureSink* sink : sinks_) sink->OnAlloc(block);
  }

  // Note [Named scopes]: an opening of a scope in the step of the
  // steady-state peak.
  struct Opening {
    uint32_t id = 0;
    int32_t parent = -1;  // the enclosing opening; -1: none in the step
    bool open = true;
    int64_t temporaries_bytes = 0;  // live, allocated inside it
  };

  void EnterScope(uint32_t id) {
    int32_t opening = -1;
    if (mark_.step == out_.series_step && mark_.step >= 1) {
      auto [it, added] = scope_index_.emplace(id, out_.scopes.size());
      if (added) out_.scopes.push_back(ScopeFigures{scope_names_[id], 0, 0});
      opening = static_cast<int32_t>(openings_.size());
      openings_.push_back(Opening{id, Innermost(), true, 0});
    }
    scope_stack_.push_back(opening);
  }

  void ExitScope() {
    if (scope_stack_.back() >= 0) openings_[scope_stack_.back()].open = false;
    scope_stack_.pop_back();
  }

  // The innermost opening in the step, -1 when none.
  int32_t Innermost() const {
    for (auto it = scope_stack_.rbegin(); it != scope_stack_.rend(); ++it) {
      if (*it >= 0) return *it;
    }
    return -1;
  }

  void ScopedAlloc(const Lifetime& block) {
    const int32_t innermost = Innermost();
    if (innermost < 0) return;
    scoped_[block.address] = innermost;
    if (block.category != Category::kTemporaries) return;
    for (int32_t o = innermost; o >= 0; o = openings_[o].parent) {
      Opening& opening = openings_[o];
      opening.temporaries_bytes += block.bytes;
      ScopeFigures& figures = out_.scopes[scope_index_.at(opening.id)];
      figures.temporaries_peak_bytes =
          std::max(figures.temporaries_peak_bytes, opening.temporaries_bytes);
    }
  }

  void ScopedFree(const Lifetime& block) {
    const auto it = scoped_.find(block.address);
    if (it == scoped_.end()) return;
    if (block.category == Category::kTemporaries) {
      for (int32_t o = it->second; o >= 0; o = openings_[o].parent) {
        if (openings_[o].open) openings_[o].temporaries_bytes -= block.bytes;
      }
    }
    scoped_.erase(it);
  }

  // The step's backward begins: its scopes' activations, each block once
  // per scope name.
  void CountScopeActivations() {
    std::vector<uint32_t> names;
    for (const auto& [address, innermost] : scoped_) {
      const Lifetime& block = live_.at(address);
      if (block.category != Category::kActivations) continue;
      names.clear();
      for (int32_t o = innermost; o >= 0; o = openings_[o].parent) {
        const uint32_t id = openings_[o].id;
        if (std::find(names.begin(), names.end(), id) != names.end()) continue;
        names.push_back(id);
        out_.scopes[scope_index_.at(id)].activations_bytes += block.bytes;
      }
    }
  }

  void Freed(const Lifetime& block) {
    const int c = Index(block.category);
    now_[c] -= block.bytes;
    total_ -= block.bytes;
    out_.stats[c].freed += block.bytes;
    ScopedFree(block);
    if (mark_.step == out_.series_step && mark_.step >= 1) {
      series_.push_back(SeriesPoint{block.free_seq, now_});
    }
    for (CaptureSink* sink : sinks_) sink->OnFree(block);
  }

  const Outline& outline_;
  const KeepSteps keep_;
  const std::vector<CaptureSink*>& sinks_;
  Analysis& out_;
  std::unordered_map<uint64_t, Lifetime> live_;
  PhaseMark mark_;
  int32_t step_ = 0;  // the step whose StepFigures is open
  // Note [Micro-batch index]: the step the count is of, its micro-batch.
  int32_t micro_step_ = 0;
  int32_t micro_batch_ = 0;
  bool backward_seen_ = false;
  Segment segment_;
  Breakdown now_{};
  int64_t total_ = 0;
  std::vector<SeriesPoint> series_;
  // Note [Named scopes]
  std::vector<std::string> scope_names_;  // by id
  std::vector<int32_t> scope_stack_;      // open scopes: openings_ or -1
  std::vector<Opening> openings_;         // the step's, in order
  std::unordered_map<uint32_t, size_t> scope_index_;  // id -> out_.scopes
  // Live blocks allocated in the step inside an opening: its innermost.
  std::unordered_map<uint64_t, int32_t> scoped_;
  bool scopes_counted_ = false;  // the step's backward began
};

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

Analysis Analyze(const Capture& capture, const AnalysisOptions& options,
                 const std::vector<CaptureSink*>& sinks) {
  if (capture.file == nullptr) {
    throw std::runtime_error("a capture without its file");  // a bug
  }
  const std::string name =
      capture.file->path().empty() ? "the capture file" : capture.file->path();
  CaptureReader reader(capture.file->fd(), name);
  CategoryColumn column;
  const Outline outline = FirstPass(reader, name, column);

  Analysis out;
  out.step_peaks = outline.step_peaks;
  out.last_step = outline.last_step;
  out.last_mark = outline.last_mark;
  out.end_seq = outline.end_seq;
  out.end_ns = outline.end_ns;
  out.killed = !outline.ended;
  out.torn_record = outline.torn;
  out.cut_short = outline.cut_short;
  out.records = outline.records;
  out.out_of_memory = outline.out_of_memory;
  const int32_t steady_from = 1 + std::max(options.one_time_through_step,
                                           outline.last_bucket_free_step);
  out.steady_from = steady_from;
  out.steady_first_step = std::max(1, std::min(steady_from, outline.last_step));
  // Killed inside a step (its last mark names a step, not the end of the
  // loop): that step is cut short, and out of the steady state when a
  // whole step is left in it. Otherwise the cut step is all there is: its
  // figures and scopes show where the rank was (the reports say that no
  // steady-state step completed).
  const bool cut_in_step = out.killed && outline.last_mark.step > 0 &&
                           outline.last_step > out.steady_first_step;
  out.steady_last_step = outline.last_step - (cut_in_step ? 1 : 0);
  // The steady-state peak's step, from the category-free totals (the first
  // highest, as Raise keeps it).
  int64_t best = -1;
  for (int32_t s = out.steady_first_step; s <= out.steady_last_step; ++s) {
    const StepPeak& peak = outline.step_peaks[s - 1];
    if (peak.seq >= 0 && peak.total_bytes > best) {
      best = peak.total_bytes;
      out.series_step = s;
    }
  }
  SecondPass pass(outline, options, sinks, out);
  pass.Run(reader, name, column);
  if (out.steady_peak.seq < 0) out.series.clear();
  AddTotals(out);
  return out;
}

Capture CaptureFromFile(const std::string& path, std::string* meta_json) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw InputError(path + ": cannot read: " + std::strerror(errno) +
                     "; give the capture-<r>.bin a run left in its --out");
  }
  Capture capture;
  capture.file = std::make_shared<const CaptureFile>(fd, path);
  const CaptureReader reader(fd, path);  // checks the header
  capture.begin_seq = reader.header().begin_seq;
  capture.begin_unix_us = reader.header().begin_unix_us;
  capture.end_seq = capture.begin_seq;
  if (meta_json != nullptr) *meta_json = reader.header().meta_json;
  return capture;
}

}  // namespace memprof
