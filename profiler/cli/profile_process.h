// `memprof profile` as a child process, for the commands that run several
// profiles (fit --measure, sweep). memprof itself does not load LibTorch;
// memprof-profile, built next to it, does the training.
#pragma once

#include <string>
#include <vector>

namespace memprof {

// memprof-profile next to the running executable.
std::string ProfileExecutable();

// Runs `memprof-profile profile <args>` with its stdout and stderr to
// `log_path`, and waits for it. Returns its exit code, or 128 + the signal
// that killed it. Throws RunFailure when it cannot start.
int RunProfileProcess(const std::vector<std::string>& args,
                      const std::string& log_path);

}  // namespace memprof
