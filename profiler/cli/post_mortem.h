// Killed ranks' reports, recovered from their capture files (Note
// [Post-mortem] in profiler/session/rank_run.h): `memprof report --run DIR`
// and the local launcher, when a rank dies by a signal, write
// rank-<r>.json for every capture-<r>.bin in DIR that has none.
#pragma once

#include <map>
#include <ostream>
#include <string>

namespace memprof {

// Writes DIR/rank-<r>.json (atomically) for each DIR/capture-<r>.bin
// without one; `killed_by` names the signal of the ranks the caller saw
// die (kUnknownEnding for the others). Says what it recovered on `err`; a
// capture it cannot read is named there and left alone. Returns the ranks
// recovered.
int RecoverKilledRanks(const std::string& dir,
                       const std::map<int, std::string>& killed_by,
                       std::ostream& err);

}  // namespace memprof
