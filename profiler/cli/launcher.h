// The local launcher: `memprof profile --world-size N` without torchrun's
// variables starts N ranks itself, as child processes of this binary
// rendezvousing on 127.0.0.1 (Note [Store socket]), and waits for them. When
// a rank fails, the others get a second to fail on their own, then are
// stopped; the failure is reported by rank, the reports of the ranks that
// left a capture are recovered (Note [Post-mortem]) and rendered;
// a rank stopped by a signal (SIGSTOP) is named as the one that stopped
// answering (Note [Stopped ranks]).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace memprof {

// `words` are the arguments after "profile", passed on to every rank.
// Returns 0 when every rank succeeded; throws RunFailure naming the first
// rank that failed and how (exit code or signal; for a rank that ran out of
// memory under --memory-limit, the failure its report in `out_dir` names).
// `timeout_s` is the ranks' collective timeout (--ddp.timeout_s). `quiet`
// (profile --quiet): the ranks' pids are not listed.
int LaunchLocalRanks(int world_size, const std::vector<std::string>& words,
                     const std::string& out_dir, int64_t timeout_s, bool quiet);

}  // namespace memprof
