#include "profiler/cli/progress_line.h"

#include <cstdio>

#include "profiler/base/human_bytes.h"

namespace memprof {

bool ProgressPacer::Due(double now_s, int64_t step) {
  const double since = now_s - last_s_;
  const bool due =
      !printed_ ||
      (step != last_step_ && since >= kProgressMinIntervalSeconds) ||
      since >= kProgressMaxSilenceSeconds;
  if (due) {
    printed_ = true;
    last_s_ = now_s;
    last_step_ = step;
  }
  return due;
}

std::string FormatElapsed(double seconds) {
  const long long whole = seconds > 0 ? static_cast<long long>(seconds) : 0;
  char text[32];
  if (whole < 3600) {
    std::snprintf(text, sizeof text, "%lld:%02lld", whole / 60, whole % 60);
  } else {
    std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", whole / 3600,
                  whole / 60 % 60, whole % 60);
  }
  return text;
}

std::string FormatProgressLine(int64_t step, int64_t steps, double elapsed_s,
                               int64_t live_bytes, int64_t highest_seen_bytes) {
  std::string line = "memprof: step " + std::to_string(step) + " of " +
                     std::to_string(steps) + ", " + FormatElapsed(elapsed_s) +
                     " elapsed";
  if (live_bytes >= 0) {
    line += ", live " + HumanBytes(live_bytes) + ", peak so far at least " +
            HumanBytes(highest_seen_bytes);
  }
  return line;
}

std::string FormatTrainedLine(int64_t steps_done, int64_t steps,
                              double elapsed_s, int64_t peak_bytes) {
  return "memprof: trained " + std::to_string(steps_done) + " of " +
         std::to_string(steps) + " steps in " + FormatElapsed(elapsed_s) +
         (peak_bytes >= 0 ? ", peak " + HumanBytes(peak_bytes) : "") +
         "; writing the reports";
}

}  // namespace memprof
