// `memprof sweep --config F --world-sizes 1,2,4 --global-batch G
// [--zero-stages 0,1] [--out D]`:
// runs the config at each world size N with micro-batch G/N (one
// `memprof profile` each, in D/ws-<N>/), then writes D/sweep.json
// (memprof.sweep/1), D/sweep.md, D/sweep.svg and D/sweep.html: per-rank
// bytes by category against N (model state flat, activations falling as
// 1/N) and the steady-state step time split into computation and the
// Reducer's measured all-reduce time (Note [Communication time]) and, under
// ZeRO-1, the parameter exchange (Note [Parameter exchange]); with
// --zero-stages each N runs once per stage, into D/ws-<N>-zero-<S>/.
// Every point is checked before any runs (a world size given twice is
// refused); each row carries its step-time spread, and a spread too wide
// to compare is warned about (Note [Step-time spread]). When a point's run
// fails, no later point runs and the completed points are still written.
// Exit codes: 0 done, 2 bad input, 3 a run failed.
#pragma once

#include "profiler/cli/config_cli.h"

namespace memprof {

int RunSweepCommand(const SweepArgs& args);

}  // namespace memprof
