#include "profiler/cli/report_command.h"

#include <iostream>
#include <stdexcept>

#include "profiler/base/errors.h"

namespace memprof {

int RunReportCommand(const ReportArgs& args) {
  return RenderRunReports(LoadRunView(args.run_dir), std::cout, std::cerr);
}

}  // namespace memprof
