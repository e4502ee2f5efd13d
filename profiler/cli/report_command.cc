#include "profiler/cli/report_command.h"

#include <iostream>
#include <stdexcept>

#include "profiler/base/errors.h"
#include "profiler/cli/post_mortem.h"
#include "profiler/cli/run_lock.h"

namespace memprof {

int RunReportCommand(const ReportArgs& args) {
  const RunReadLock lock(args.run_dir);             // Note [Reading a live run]
  RecoverKilledRanks(args.run_dir, {}, std::cerr);  // Note [Post-mortem]
  return RenderRunReports(LoadRunView(args.run_dir), std::cout, std::cerr);
}

}  // namespace memprof
