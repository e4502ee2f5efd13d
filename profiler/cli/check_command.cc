#include "profiler/cli/check_command.h"

#include <iostream>
#include <string>

#include "profiler/base/atomic_file.h"
#include "profiler/base/errors.h"
#include "profiler/cli/run_lock.h"
#include "profiler/gate/gate_run.h"
#include "profiler/report/run_files.h"

namespace memprof {

int RunCheckCommand(const CheckArgs& args) {
  PrepareCheckOutputs(args.check, args.run_dir);
  const Baseline baseline = LoadBaseline(args.check.baseline_path);
  const RunReadLock lock(args.run_dir);  // Note [Reading a live run]
  const RunFigures run = LoadRun(args.run_dir);
  return GateRun(baseline, run, args.run_dir, args.check);
}

int RunBaselineCommand(const BaselineArgs& args) {
  RequireOutsideRun("--out", args.out_path, args.run_dir);
  RequireReplaceableFile("--out", args.out_path);
  Baseline baseline;
  const RunReadLock lock(args.run_dir);  // Note [Reading a live run]
  baseline.run = LoadRun(args.run_dir);
  baseline.tolerances = args.tolerances;
  WriteFlaggedFile("--out", args.out_path,
                   BaselineToJson(baseline).dump(2) + "\n");
  const RunContext& c = baseline.run.context;
  std::cout << "memprof baseline: wrote " << args.out_path << " from "
            << args.run_dir << ": " << c.world_size << " rank"
            << (c.world_size == 1 ? "" : "s") << ", " << c.parameters
            << " parameters, steady-state peak of rank 0 "
            << baseline.run.ranks[0].peak_total_bytes << " B\n";
  return kExitOk;
}

}  // namespace memprof
