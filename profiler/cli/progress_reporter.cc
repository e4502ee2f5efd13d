#include "profiler/cli/progress_reporter.h"

#include <unistd.h>

#include <cstdio>

#include "profiler/capture/memory_tracker.h"

namespace memprof {

ProgressReporter::ProgressReporter(int64_t steps, bool memory)
    : steps_(steps),
      memory_(memory),
      terminal_(::isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()),
      thread_([this] { Loop(); }) {}

ProgressReporter::~ProgressReporter() {
  const bool finished = stopped();
  Stop();
  if (!finished && terminal_ && printed_) std::fputs("\n", stderr);
}

bool ProgressReporter::stopped() {
  std::lock_guard<std::mutex> lock(mutex_);
  return stop_;
}

void ProgressReporter::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stop_) return;
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void ProgressReporter::Finish(int64_t steps_done, int64_t peak_bytes) {
  Stop();
  Print(FormatTrainedLine(steps_done, steps_, SecondsSinceStart(), peak_bytes),
        /*last=*/true);
}

double ProgressReporter::SecondsSinceStart() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                       start_)
      .count();
}

std::string ProgressReporter::LineNow() {
  const MemoryTracker::Progress now = MemoryTracker::Get().SessionProgress();
  return FormatProgressLine(now.step, steps_, SecondsSinceStart(),
                            memory_ ? now.live_bytes : -1,
                            memory_ ? now.highest_seen_bytes : -1);
}

void ProgressReporter::Print(const std::string& line, bool last) {
  // On a terminal: back to the line's start, the line, the rest of the old
  // one erased; a newline only after the last.
  const std::string text =
      terminal_ ? "\r" + line + "\x1b[K" + (last ? "\n" : "") : line + "\n";
  std::fputs(text.c_str(), stderr);
  std::fflush(stderr);
  printed_ = true;
}

void ProgressReporter::Loop() {
  ProgressPacer pacer;
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock,
                         std::chrono::duration<double>(kProgressPollSeconds),
                         [this] { return stop_; })) {
    const int32_t step = MemoryTracker::Get().SessionProgress().step;
    if (step < 1) continue;  // setting up
    if (pacer.Due(SecondsSinceStart(), step)) Print(LineNow(), /*last=*/false);
  }
}

}  // namespace memprof
