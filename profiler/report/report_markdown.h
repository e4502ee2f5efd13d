// report.md: the ReportText as GitHub-flavoured Markdown.
#pragma once

#include <string>

#include "profiler/report/report_text.h"

namespace memprof {

std::string FormatReportMarkdown(const ReportText& text);

}  // namespace memprof
