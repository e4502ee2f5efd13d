#include "profiler/cli/report_command.h"

#include <iostream>
#include <stdexcept>

#include "profiler/base/errors.h"
#include "profiler/cli/post_mortem.h"

namespace memprof {

int RunReportCommand(const ReportArgs& args) {
  RecoverKilledRanks(args.run_dir, {}, std::cerr);  // Note [Post-mortem]
  return RenderRunReports(LoadRunView(args.run_dir), std::cout, std::cerr);
}

}  // namespace memprof
