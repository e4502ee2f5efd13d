// `memprof profile` as a child process, for the commands that run several
// profiles (fit --measure, sweep): the one place that builds its words,
// runs it and reads the rank reports it wrote (through the one reader,
// profiler/report/rank_report.h). memprof itself does not load LibTorch;
// memprof-profile, built next to it, does the training.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/report/rank_report.h"

namespace memprof {

// memprof-profile next to the running executable.
std::string ProfileExecutable();

// One run: `memprof profile CONFIG_WORDS --world-size N [--micro-batch B]
// --global-batch G [--memory-limit L] --out DIR`.
struct ProfileChildRequest {
  // The config file and its --section.key flags (FitArgs::profile_words).
  std::vector<std::string> config_words;
  int64_t world_size = 1;
  int64_t micro_batch = 0;         // 0: not passed (the config's)
  int64_t global_batch = 0;        // always passed; 0: micro-batch decides
  int64_t memory_limit_bytes = 0;  // 0: not passed (no limit)
  int64_t zero_stage = -1;         // -1: not passed (the config's)
  int64_t grad_accum = 0;          // 0: not passed (the config's)
  // --out; its parent must exist. The child's stdout and stderr go to
  // OUT_DIR.log, beside it.
  std::string out_dir;
};

struct ProfileChildResult {
  int exit_code = 0;  // the child's, or 128 + the signal that killed it
  std::string log_path;
  // The reports of the ranks < world size that wrote one, in rank order: a
  // rank that failed before writing its report is absent.
  std::vector<RankReport> reports;
};

// Runs the child and waits for it. Throws RunFailure when it cannot start,
// or when a report it wrote cannot be read (the writer and the reader
// disagree: a bug).
ProfileChildResult RunProfileChild(const ProfileChildRequest& request);

}  // namespace memprof
