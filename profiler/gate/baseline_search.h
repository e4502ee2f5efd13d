// Where a run's baseline is, when the one it was checked against holds
// another config: the baselines beside it that do hold the run's context,
// and the name a new one would take. Serves the remedy of a refused check.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "profiler/gate/baseline.h"

namespace memprof {

// The files `*.json` in `dir` that parse as baselines and satisfy
// `matches`, sorted. Reads at most kMaxSearchedBaselines files of at most
// kMaxSearchedBaselineBytes each (the committed ones are under 4 KiB);
// anything unreadable is skipped: this only names candidates.
inline constexpr int kMaxSearchedBaselines = 256;
inline constexpr int64_t kMaxSearchedBaselineBytes = int64_t{1} << 20;
std::vector<std::string> FindBaselines(
    const std::string& dir,
    const std::function<bool(const RunContext&)>& matches);

// The name reports/baselines gives a baseline of `context`: the config
// file's stem (or the model), "-ws<N>", then "-zero1", "-<dtype>" and
// "-checkpointed" where the config has them: "mlp-tiny-ws2-zero1.json". A
// program's run is named by its SessionOptions::name; characters a file
// name should not hold become '-'.
std::string BaselineFileName(const RunContext& context);

}  // namespace memprof
