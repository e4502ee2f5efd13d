// How a rank's run ended, from its report alone: every configured step run
// to completion, or why not. The gate refuses a run whose ranks did not all
// finish (a failed run has no figures to compare or to keep), and the
// reports say which steps a cut-short run never reached.
#pragma once

#include <string>

#include "profiler/report/rank_report.h"

namespace memprof {

// "" when the rank ran every configured step to completion; otherwise why
// not, in words, first cause first: "ran out of memory in step 2 of 300",
// "killed (signal 9 (Killed)) in step 7 of 300; its report was recovered
// from its capture (post-mortem)", "did not complete step 3 of 4", "ran 2 of 4
// steps".
// The steps the run was configured for; 0 when unknown (a program's rank
// recovered from its capture: its own loop decided).
int64_t ConfiguredSteps(const RankReport& report);

std::string UnfinishedReason(const RankReport& report);

// Whether some step from the steady state's first on ran to completion: the
// figures "at the steady-state peak" are then a whole step's, comparable
// with the prediction. False for a rank cut short before that.
bool ReachedSteadyState(const RankReport& report);

// Whether the run has DDP buckets, which DDP rebuilds once in step 2 (a
// program that tracked no Reducer has none).
bool RebuildsDdpBuckets(const RankReport& report);

// "step 1 creates the gradients and optimizer state", with ", DDP rebuilds
// its buckets once in step 2" when it does: why the steady state begins
// where it does.
std::string OneTimeSteps(const RankReport& report);

}  // namespace memprof
