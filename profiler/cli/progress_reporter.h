// The progress line while this rank trains (Note [Progress line]): a thread
// that samples the memory tracker and writes to standard error.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "profiler/cli/progress_line.h"

namespace memprof {

class ProgressReporter {
 public:
  // Starts sampling for a run of `steps` steps; `memory`: the tracker
  // measures this run (false under --no-hook: the line shows steps only).
  ProgressReporter(int64_t steps, bool memory);
  // Stops; the last line is left as it was (ended, on a terminal, so that
  // an error message starts a line of its own).
  ~ProgressReporter();
  ProgressReporter(const ProgressReporter&) = delete;
  ProgressReporter& operator=(const ProgressReporter&) = delete;

  // Stops and prints that training is over: `steps_done` steps, and the
  // run's exact peak (`peak_bytes`; negative: not measured).
  void Finish(int64_t steps_done, int64_t peak_bytes);

 private:
  void Loop();
  std::string LineNow();  // a sample of the tracker, formatted
  double SecondsSinceStart() const;
  void Print(const std::string& line, bool last);
  void Stop();
  bool stopped();

  const int64_t steps_;
  const bool memory_;
  const bool terminal_;  // standard error is a terminal: rewrite one line
  const std::chrono::steady_clock::time_point start_;
  bool printed_ = false;  // the thread's until it is joined
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;  // guarded by mutex_
  std::thread thread_;
};

}  // namespace memprof
