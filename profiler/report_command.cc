#include "profiler/report_command.h"

#include <iostream>
#include <stdexcept>

#include "profiler/errors.h"

namespace memprof {

int RenderRunReports(const RunView& view, std::ostream& out,
                     std::ostream& err) {
  try {
    WriteRunReports(view);
  } catch (const std::runtime_error& e) {
    throw InputError(std::string(e.what()) + "; make " + view.dir +
                     " writable");
  }
  for (const RankFileProblem& problem : view.problems) {
    err << "memprof: rank " << problem.rank << ": " << problem.path << ": "
        << problem.reason << "\n";
  }
  out << "reports: " << view.dir << "/report.md, report.html, trace.json";
  if (!view.complete()) {
    out << " (incomplete: " << view.ranks.size() << " of " << view.world_size
        << " ranks)";
  }
  out << "\n" << std::flush;
  return view.complete() ? kExitOk : kExitBadInput;
}

int RunReportCommand(const ReportArgs& args) {
  return RenderRunReports(LoadRunView(args.run_dir), std::cout, std::cerr);
}

}  // namespace memprof
