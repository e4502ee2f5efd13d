// What both executables' main() share: running a command with the
// documented exit codes (profiler/base/errors.h), every error message naming
// the rank, host and pid when the process is one rank of a job.
#pragma once

#include <functional>

namespace memprof {

// Makes standard output line-buffered, terminal or not (a pipe, a CI log):
// each line is written as it ends, so a killed run leaves the lines it
// printed. Then runs `command`; an InputError prints "memprof: ... error: ..."
// and gives 2, any other exception "run failed" and 3. memprof's own allocation
// failing (std::bad_alloc, even where nothing can catch it) prints that it
// ran out of memory and gives 3.
int RunWithExitCodes(const std::function<int()>& command);

}  // namespace memprof
