// `memprof report --run DIR`: renders report.md, report.html and trace.json
// again from the rank reports alone (files copied off another machine, CI
// artifacts). Exit codes: 0 every rank report was read; 2 one or more are
// missing or malformed (each named with the reason on stderr; the reports
// are still rendered from the readable ranks and marked incomplete), or none
// is usable (nothing written).
#pragma once

#include <iosfwd>

#include "profiler/config_cli.h"
#include "profiler/run_reports.h"

namespace memprof {

int RunReportCommand(const ReportArgs& args);

// Writes the three reports of `view` and names them on `out`; names each
// unreadable rank report on `err`. Returns 0, or 2 when the run is
// incomplete.
int RenderRunReports(const RunView& view, std::ostream& out, std::ostream& err);

}  // namespace memprof
