// report.html: one self-contained page (inline CSS and SVG, no external
// resource) with the charts and the tables of the ReportText.
#pragma once

#include <string>

#include "profiler/report/report_text.h"
#include "profiler/report/run_reports.h"

namespace memprof {

std::string FormatReportHtml(const RunView& view, const ReportText& text);

// The pieces other pages (memprof sweep) are made of: a table as a
// <section>, and a self-contained page (the same style, Content-Security-
// Policy and chart-measuring script) around `body`, titled `title`.
std::string HtmlTable(const ReportTable& table);
// A chart's SVG in a box of its own that scrolls sideways when the chart is
// wider than the page.
std::string HtmlChart(const std::string& svg);
std::string HtmlPage(const std::string& title, const std::string& body);

}  // namespace memprof
