// A user's program as a child of `memprof fit --runs --measure`: its
// command line run through /bin/sh with {micro_batch} and {out} replaced,
// MEMPROF_OUT and MEMPROF_MEMORY_LIMIT set for its memprof::Session, in a
// process group of its own, so that a run past its timeout, or left behind
// by its launcher, is stopped whole (the launcher and every rank).
#pragma once

#include <cstdint>
#include <string>

namespace memprof {

// `command` with each {micro_batch} replaced by `micro_batch` and each
// {out} by `out_dir`, quoted for the shell.
std::string CommandLineAt(const std::string& command, int64_t micro_batch,
                          const std::string& out_dir);

struct CommandRun {
  int exit_code = 0;       // the shell's, or 128 + the signal that killed it
  bool timed_out = false;  // stopped after `timeout_s`
  std::string log_path;    // its standard output and error: OUT_DIR.log
};

// Runs `command_line` with MEMPROF_OUT=`out_dir` and, when
// `memory_limit_bytes` > 0, MEMPROF_MEMORY_LIMIT=`memory_limit_bytes`, and
// waits at most `timeout_s` seconds (then SIGTERM to its process group,
// SIGKILL 5 s later). Whatever of its group outlives it is killed. SIGINT
// or SIGTERM to memprof while it waits stop the group too, and memprof
// exits 128 + the signal. Throws RunFailure when it cannot start.
CommandRun RunCommandChild(const std::string& command_line,
                           const std::string& out_dir,
                           int64_t memory_limit_bytes, int64_t timeout_s);

// Where measured runs write: `out_dir` (created, or an empty directory
// already there), or a new temporary directory when it is "". Each run
// writes in a directory of its own inside.
std::string MeasuredRunsDir(const std::string& out_dir);

}  // namespace memprof
