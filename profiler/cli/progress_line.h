// The progress line of `memprof profile` (rank 0, on standard error): step
// k of K, the time since training began, the live bytes and the highest
// seen. When lines are due (ProgressPacer) is decided apart from the clock,
// so it is tested without one.
#pragma once

#include <cstdint>
#include <string>

namespace memprof {

// Note [Progress line]
// Rank 0 prints it: the ranks step in lockstep (every step's gradients are
// reduced together), so its step is the job's, and its memory figures are
// its own, as the report's first table is. The launcher is not the one: it
// sees the ranks' exit codes, not their memory. A thread samples the
// tracker every kProgressPollSeconds; a line is due when the step moved
// and kProgressMinIntervalSeconds have passed since the last line (one per
// step when steps are slow, one a second or so when they are fast), or
// when kProgressMaxSilenceSeconds have passed whatever the step (a long
// step): so a line comes at least every 4.25 s. On a terminal each line
// rewrites the last; otherwise (a pipe, a CI log) each is a line.
// `profile --quiet` prints none.
inline constexpr double kProgressPollSeconds = 0.25;
inline constexpr double kProgressMinIntervalSeconds = 1;
inline constexpr double kProgressMaxSilenceSeconds = 4;

class ProgressPacer {
 public:
  // Whether a line is due at `now_s` (seconds on any clock that does not go
  // back) with the run at step `step`; when it is, it counts as printed.
  bool Due(double now_s, int64_t step);

 private:
  bool printed_ = false;
  double last_s_ = 0;
  int64_t last_step_ = 0;
};

// "memprof: step 12 of 1500, 0:03 elapsed, live 1.20 MiB, peak so far at
// least 2.34 MiB" (no newline); without the memory figures when
// `live_bytes` is negative (a run without the hook).
std::string FormatProgressLine(int64_t step, int64_t steps, double elapsed_s,
                               int64_t live_bytes, int64_t highest_seen_bytes);

// "memprof: trained 1500 of 1500 steps in 0:05, peak 2.41 MiB; writing the
// reports", the line after training; without the peak when `peak_bytes` is
// negative.
std::string FormatTrainedLine(int64_t steps_done, int64_t steps,
                              double elapsed_s, int64_t peak_bytes);

// "0:03", "12:40", "1:02:03": whole seconds, rounded down.
std::string FormatElapsed(double seconds);

}  // namespace memprof
