// The local launcher: `memprof profile --world-size N` without torchrun's
// variables starts N ranks itself, as child processes of this binary
// rendezvousing on 127.0.0.1 at a free port, and waits for them. When a rank
// fails, the others are stopped and the failure is reported by rank.
#pragma once

#include <string>
#include <vector>

namespace memprof {

// `words` are the arguments after "profile", passed on to every rank.
// Returns 0 when every rank succeeded; throws RunFailure naming the first
// rank that failed and how (exit code or signal; for a rank that ran out of
// memory under --memory-limit, the failure its report in `out_dir` names).
int LaunchLocalRanks(int world_size, const std::vector<std::string>& words,
                     const std::string& out_dir);

// A TCP port on 127.0.0.1 that was free a moment ago.
int FreeLocalPort();

}  // namespace memprof
