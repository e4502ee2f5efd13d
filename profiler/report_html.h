// report.html: one self-contained page (inline CSS and SVG, no external
// resource) with the charts and the tables of the ReportText.
#pragma once

#include <string>

#include "profiler/report_text.h"
#include "profiler/run_reports.h"

namespace memprof {

std::string FormatReportHtml(const RunView& view, const ReportText& text);

}  // namespace memprof
