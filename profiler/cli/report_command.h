// `memprof report --run DIR`: renders report.md, report.html and trace.json
// again from the rank reports alone (files copied off another machine, CI
// artifacts). A rank killed mid-run (a capture-<r>.bin and no
// rank-<r>.json) gets its report recovered from its capture first (Note
// [Post-mortem]). Exit codes: 0 every rank report was read; 2 one or more are
// missing or malformed (each named with the reason on stderr; the reports
// are still rendered from the readable ranks and marked incomplete), or none
// is usable (nothing written).
#pragma once

#include "profiler/cli/config_cli.h"
#include "profiler/report/run_reports.h"

namespace memprof {

int RunReportCommand(const ReportArgs& args);

}  // namespace memprof
